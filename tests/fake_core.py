"""A stand-in for SessionCore with just enough behaviour to exercise the transports.

It is not a fake of anything we test here: the transports are. Its calls fail on cue
(by the session title or turn text) so that each wire's error mapping can be checked,
and it records what it was handed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from blitz.core import CallContext
from blitz.errors import BlitzError, Reason
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
