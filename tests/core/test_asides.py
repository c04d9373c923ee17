"""Aside turns: side questions that run beside a session's turn, each its session's own."""

from __future__ import annotations

import asyncio

import pytest
from support.wire import Wire

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


async def test_two_sessions_asides_with_the_same_turn_id_are_told_apart(direct: Wire):
    first, second = await direct.create_session(), await direct.create_session()

    async def aside(session_id: str, text: str) -> list[t.TurnEvent]:
        request = s.RunTurnRequest(
            session_id=session_id, turn_id="side", turn=t.Turn(text=text, aside=True)
        )
        return [e async for e in direct.stream("RunTurn", request)]

    long_one = asyncio.create_task(aside(first.id, "stream: 200000"))
    other = asyncio.create_task(aside(second.id, "stream: 200000"))
    await asyncio.sleep(0.2)
    cancelled = await direct.call("Cancel", s.CancelRequest(session_id=first.id, turn_id="side"))
    first_events = await long_one
    other.cancel()
    assert cancelled.turn_id == "side"
    assert first_events[-1].finished.error.reason == "CANCELLED"
    second_get = await direct.call("GetSession", s.GetSessionRequest(session_id=second.id))
    assert second_get.state == s.SESSION_STATE_IDLE, "an aside leaves its session as it was"
    # The other session's aside was not the one cancelled: it is still running.
    streamed = await direct.call("Cancel", s.CancelRequest(session_id=second.id, turn_id="side"))
    assert streamed.turn_id == "side"
