"""The SDK given every replica's address goes on when the one it uses is killed (-9).

Each test gives `AsyncBlitz` both replicas' addresses, over one transport, and kills A, the
first, under a turn's stream: the client moves on to B, where the stream resumes by seq,
so that the turn's events arrive whole, in order and once each, and later calls go to B.
A dead replica's running turn is ended by B within a few 1.5 s leases
(support/replicas.py); the bounds here are tens of seconds, far from a loaded machine's.
"""

from __future__ import annotations

import asyncio

import pytest
from support.replicas import Replica, check_log, contiguous, replay
from support.waiting import wait_until

from blitz.v1 import turn_pb2 as t
from blitz_client import AsyncBlitz

# A stream far longer than any test waits for: it is still streaming when A is killed.
ENDLESS = "stream: 200000"


def address(replica: Replica, kind: str) -> str:
    return replica.grpc_target if kind == "grpc" else replica.http_url


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_turn_streaming_from_a_killed_replica_ends_whole_through_the_other(
    replicas, wires, kind
):
    a, b = replicas("a", "b")
    events: list[t.TurnEvent] = []
    async with AsyncBlitz([address(a, kind), address(b, kind)]) as blitz:
        session = await blitz.create_session()
        assert blitz.url == address(a, kind)
        async with asyncio.timeout(60):
            async for event in blitz.run(session.id, ENDLESS):
                events.append(event)
                if len(events) == 20:
                    a.kill()
        assert blitz.url == address(b, kind)
        # Later calls go to B: a turn that parks, is decided and ends.
        after: list[t.TurnEvent] = []
        async with asyncio.timeout(60):
            async for event in blitz.run(session.id, "$ echo on-b"):
                after.append(event)
                if event.HasField("approval_request"):
                    await blitz.decide(session.id, event.approval_request.request_id, "once")
        assert blitz.urls == (address(a, kind), address(b, kind))

    assert events[-1].finished.error.reason == "SERVER_RESTARTED", "B ended A's turn"
    assert events[0].seq == 1 and contiguous(events), "no gap and no repeat"
    stored = await replay(wires(b, "grpc"), session.id)
    check_log(stored)
    assert stored[: len(events)] == events, "what the client saw is what was stored"
    assert not after[-1].finished.HasField("error")
    assert [e.tool_result.result["output"] for e in after if e.HasField("tool_result")] == [
        "on-b\n"
    ]


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_turn_parked_on_a_killed_replica_is_decided_and_ends_through_the_other(
    replicas, wires, kind
):
    a, b = replicas("a", "b")
    events: list[t.TurnEvent] = []
    parked = asyncio.Event()
    async with AsyncBlitz([address(a, kind), address(b, kind)]) as blitz:
        session = await blitz.create_session()

        async def consume() -> None:
            async for event in blitz.run(session.id, "$ echo moved"):
                events.append(event)
                # Parked once this is stored: held by no replica, so A's death leaves it be.
                if event.session_state.state == t.SessionStateChange.STATE_PARKED:
                    parked.set()

        async with asyncio.timeout(60), asyncio.TaskGroup() as tasks:
            tasks.create_task(consume())
            await parked.wait()
            assert blitz.url == address(a, kind)
            a.kill()
            # The stream breaks as A dies, and the client moves on to B to resume it.
            assert await wait_until(lambda: blitz.url == address(b, kind), within=20)
            request = next(e for e in events if e.HasField("approval_request"))
            await blitz.decide(session.id, request.approval_request.request_id, "once")

    assert not events[-1].finished.HasField("error"), events[-1]
    assert events[0].seq == 1 and contiguous(events), "no gap and no repeat"
    results = [e.tool_result.result["output"] for e in events if e.HasField("tool_result")]
    assert results == ["moved\n"], "run once, by B"
    stored = await replay(wires(b, "connect"), session.id)
    check_log(stored)
    assert stored == events
