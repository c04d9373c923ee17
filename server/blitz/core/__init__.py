"""The transport-free core: sessions, turns, the event log, parking, the ledger.

It implements the ports of every service (`SessionCore`, `WorkspaceCore`, `WebhookCore`,
`WorkflowCore`, `ScheduleCore`, `HookCore`) and drives turns through the agent port
(`blitz.ports.agent`); it imports nothing from `blitz.agent` or `blitz.transport`. Its
parts are built and wired by `blitz.assembly`, each handed what it needs; no service
reaches through another.
"""

from blitz.core.api.service import ServerFacts, SessionCore
from blitz.core.api.workspace_service import WorkspaceCore
from blitz.core.hook_service import HookCore
from blitz.core.schedules import ScheduleCore
from blitz.core.webhooks import Retries, WebhookCore
from blitz.core.workflows.workflow_service import WorkflowCore

__all__ = [
    "HookCore",
    "Retries",
    "ScheduleCore",
    "ServerFacts",
    "SessionCore",
    "WebhookCore",
    "WorkflowCore",
    "WorkspaceCore",
]
