"""Test support: a client of a core in this process, calling the session port directly.

Calls are made by SessionService method name with a `CallContext`, as a transport would
make them; no socket, no wire format. The core's own tests use it (tests/core).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from blitz.ports import CallContext, SessionPort
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t


def _snake(method: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in method).lstrip("_")


class Direct:
    """A client of a core in this process: the session port's calls, by method name."""

    def __init__(self, core: SessionPort, ctx: CallContext | None = None) -> None:
        self.core = core
        self.ctx = ctx or CallContext()

    async def call(self, method: str, request: Any) -> Any:
        return await getattr(self.core, _snake(method))(request, self.ctx)

    def stream(self, method: str, request: Any) -> AsyncIterator[t.TurnEvent]:
        return getattr(self.core, _snake(method))(request, self.ctx)

    async def create_session(self, **fields: Any) -> s.Session:
        return await self.call("CreateSession", s.CreateSessionRequest(**fields))

    def run(self, session_id: str, text: str = "", **turn: Any) -> AsyncIterator[t.TurnEvent]:
        request = s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=text, **turn))
        return self.stream("RunTurn", request)

    async def run_all(self, session_id: str, text: str, **turn: Any) -> list[t.TurnEvent]:
        return [e async for e in self.run(session_id, text, **turn)]


OpenCore = Callable[..., AbstractAsyncContextManager[Direct]]
