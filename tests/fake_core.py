"""A test double of the session and workspace ports, to exercise the transports alone.

It is not a fake of anything we test here: the transports are. Its calls fail on cue
(by the session title or turn text) so that each wire's error mapping can be checked,
and it records what it was handed. Calls the transport tests do not make answer
UNIMPLEMENTED-like INTERNAL errors; it implements `SessionPort` and `WorkspacePort` whole,
so it is served as it is (`FakeCore.ports`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from blitz.errors import BlitzError, Reason
from blitz.ports import CallContext, SessionPort, WorkspacePort
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

SECRET = "the database password is hunter2"


class FakeCore:
    def __init__(self) -> None:
        self.contexts: list[CallContext] = []
        self.closed_streams = 0
        self.slow_calls = 0
        self.release = asyncio.Event()
        self._changed = asyncio.Condition()

    async def wait_until(self, predicate: Callable[[FakeCore], bool]) -> None:
        """Wait until `predicate(self)` holds (checked whenever a counter changes)."""
        async with self._changed:
            await self._changed.wait_for(lambda: predicate(self))

    async def _count(self, counter: str) -> None:
        async with self._changed:
            setattr(self, counter, getattr(self, counter) + 1)
            self._changed.notify_all()

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        self.contexts.append(ctx)
        if req.title == "boom":
            raise RuntimeError(SECRET)
        if req.title == "slow":
            await self._count("slow_calls")
            await self.release.wait()
        return s.Session(id="s-1", title=req.title, labels=dict(req.labels))

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        raise BlitzError(
            Reason.SESSION_NOT_FOUND,
            f"no session {req.session_id!r}",
            {"session_id": req.session_id},
        )

    async def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        """Two events, then: success, a BlitzError ("fail") or a crash ("crash")."""
        try:
            for seq in (1, 2):
                yield t.TurnEvent(seq=seq, session_id=req.session_id, turn_id="t-1")
            if req.turn.text == "fail":
                raise BlitzError(Reason.MODEL_ERROR, "the model is unreachable", {"model": "x"})
            if req.turn.text == "crash":
                raise RuntimeError(SECRET)
        finally:
            await self._count("closed_streams")

    async def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        """One event, then with `follow` waits for ever (until ended)."""
        try:
            yield t.TurnEvent(seq=req.after_seq + 1, session_id=req.session_id)
            if req.follow:
                await asyncio.Event().wait()
        finally:
            await self._count("closed_streams")

    # The rest of both ports: the transport tests never call them.

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        raise _unused()

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        raise _unused()

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse:
        raise _unused()

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        raise _unused()

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        raise _unused()

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        raise _unused()

    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport:
        raise _unused()

    async def list_rules(self, req: s.ListRulesRequest, ctx: CallContext) -> s.ListRulesResponse:
        raise _unused()

    async def revoke_rule(self, req: s.RevokeRuleRequest, ctx: CallContext) -> s.RevokeRuleResponse:
        raise _unused()

    async def accept_plan(
        self, req: s.AcceptPlanRequest, ctx: CallContext
    ) -> AsyncIterator[t.TurnEvent]:
        raise _unused()
        yield t.TurnEvent()  # pragma: no cover - makes this an async generator

    async def reject_plan(self, req: s.RejectPlanRequest, ctx: CallContext) -> s.RejectPlanResponse:
        raise _unused()

    async def get_server_info(self, req: s.GetServerInfoRequest, ctx: CallContext) -> s.ServerInfo:
        raise _unused()

    async def list_turns(self, req: s.ListTurnsRequest, ctx: CallContext) -> s.ListTurnsResponse:
        raise _unused()

    async def update_session(self, req: s.UpdateSessionRequest, ctx: CallContext) -> s.Session:
        raise _unused()

    async def delete_session(
        self, req: s.DeleteSessionRequest, ctx: CallContext
    ) -> s.DeleteSessionResponse:
        raise _unused()

    async def fork_session(self, req: s.ForkSessionRequest, ctx: CallContext) -> s.Session:
        raise _unused()

    async def get_diff(self, req: w.GetDiffRequest, ctx: CallContext) -> w.GetDiffResponse:
        raise _unused()

    async def upload_image(
        self, req: w.UploadImageRequest, ctx: CallContext
    ) -> w.UploadImageResponse:
        raise _unused()

    async def list_files(self, req: w.ListFilesRequest, ctx: CallContext) -> w.ListFilesResponse:
        raise _unused()

    async def read_file(self, req: w.ReadFileRequest, ctx: CallContext) -> w.ReadFileResponse:
        raise _unused()

    @property
    def ports(self) -> tuple[SessionPort, WorkspacePort]:
        """What `running_server(ports=...)` serves: this double, as both ports."""
        return self, self


def _unused() -> BlitzError:
    return BlitzError(Reason.INTERNAL, "not part of the transport tests")
