"""The transport-free core: sessions, turns, the event log, parking, the ledger."""

from blitz.core.context import CallContext
from blitz.core.service import SessionCore
from blitz.core.workspace import WorkspaceCore

__all__ = ["CallContext", "SessionCore", "WorkspaceCore"]
