"""SessionService, transport-free. (Skeleton: being written.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from types import TracebackType

from blitz.core.context import CallContext
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["SessionCore"]


class SessionCore:
    """Every SessionService call, taking and returning protobuf messages.

    Use as `async with SessionCore(...) as core:`; leaving the block drains running turns.
    Methods raise `blitz.errors.BlitzError`; streams may raise it mid-way too.
    """

    def __init__(
        self,
        *,
        store: object,
        agent: object,
        workspace_root: Path,
        default_model: str = "demo",
        default_max_turns: int = 50,
        default_timeout: timedelta | None = None,
        approval_timeout: timedelta | None = None,
        drain_timeout: float = 10.0,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> SessionCore:
        raise NotImplementedError

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raise NotImplementedError

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        raise NotImplementedError

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        raise NotImplementedError

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        raise NotImplementedError

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        raise NotImplementedError

    def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        raise NotImplementedError

    def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        raise NotImplementedError

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse:
        raise NotImplementedError

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        raise NotImplementedError

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        raise NotImplementedError

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        raise NotImplementedError

    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport:
        raise NotImplementedError
