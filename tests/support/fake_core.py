"""A test double of the session, workspace and webhook ports, to exercise the transports
alone.

It is not a fake of anything we test here: the transports are. Its calls fail on cue
(by the session title or turn text) so that each wire's error mapping can be checked,
and it records what it was handed. Calls the transport tests do not make answer
INTERNAL; it implements every method of `SessionPort`, `WorkspacePort`, `WebhookPort`
and `WorkflowPort`, whatever RPCs the services hold, so it is served as it is
(`FakeCore.ports`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from blitz.errors import BlitzError, Reason
from blitz.ports import CallContext, ServicePorts
from blitz.transport.methods import SERVICES, methods_of
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

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

    # The rest of both ports, whatever RPCs they hold: the transport tests call them only
    # to see them served, and each answers INTERNAL.

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = _UNUSED.get(name)
        if method is None:
            raise AttributeError(name)
        if method.streaming:

            async def stream(req: Any, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
                raise _unused()
                yield t.TurnEvent()  # pragma: no cover - makes this an async generator

            return stream

        async def unary(req: Any, ctx: CallContext) -> Any:
            raise _unused()

        return unary

    @property
    def ports(self) -> ServicePorts:
        """What `running_server(ports=...)` serves: this double, as every service's port."""
        return {service.full_name: self for service in SERVICES}


# Every port method by name, for those this double does not define itself.
_UNUSED = {m.port_method: m for service in SERVICES for m in methods_of(service)}


def _unused() -> BlitzError:
    return BlitzError(Reason.INTERNAL, "not part of the transport tests")
