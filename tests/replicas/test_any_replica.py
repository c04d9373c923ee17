"""Any replica serves any session: what one starts, another streams, answers, steers, stops.

Two `blitz serve` processes share one PostgreSQL database and one data folder; the first
is reached over gRPC, the second over Connect.
"""

from __future__ import annotations

import asyncio
import time

from support.replicas import Replica, contiguous, read_until_finished
from support.wire import Wire, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

ONCE = t.DECISION_ONCE


def resumed_by(replica: Replica, turn_id: str) -> bool:
    return any(
        line.get("event") == "turn_resumed" and line.get("turn_id") == turn_id
        for line in replica.lines()
    )


async def test_a_turn_on_one_replica_is_watched_live_on_another(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    watch = on_b.stream("Watch", s.WatchRequest(session_id=session.id, follow=True))
    run = on_a.run(session.id, "stream: 300\n$ echo checked")
    request = await until(run, "approval_request")
    # B streams what A writes while A's turn waits: live, not a replay after the fact.
    watched: list[t.TurnEvent] = []
    async with asyncio.timeout(30):
        async for event in watch:
            watched.append(event)
            if event.HasField("approval_request"):
                break
    assert watched[-1] == request
    await on_a.decide(session.id, request, ONCE)
    ran = [request, *[e async for e in run]]
    async with asyncio.timeout(30):
        watched += await read_until_finished(watch)
    assert watched[-len(ran) :] == ran, "the same events, in the same order"
    assert [e.seq for e in watched] == list(range(1, len(watched) + 1)), "no gap, no duplicate"


async def parked(wire: Wire, session_id: str) -> None:
    """Wait until the session's turn is parked: no replica holds it any more.

    An answer that arrives while the turn is still being parked is taken up by the
    replica parking it, which finds it answered; once parked, the answer's receiver resumes.
    """
    async with asyncio.timeout(30):
        while True:
            got = await wire.call("GetSession", s.GetSessionRequest(session_id=session_id))
            if got.state == s.SESSION_STATE_PARKED:
                return
            await asyncio.sleep(0.05)


async def test_decisions_and_answers_sent_to_another_replica_resume_the_turn_there(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    events = []
    async for event in on_a.run(session.id, "$ echo from-a\nask: which colour? [red|blue]"):
        events.append(event)
        if event.HasField("approval_request"):
            await parked(on_b, session.id)
            await on_b.decide(session.id, event, ONCE)
        elif event.HasField("question"):
            await parked(on_b, session.id)
            answer = s.AnswerRequest(
                session_id=session.id, request_id=event.question.request_id, answers=["blue"]
            )
            await on_b.call("Answer", answer)
    assert not events[-1].finished.HasField("error")
    [command, asked] = [e.tool_result.result for e in events if e.HasField("tool_result")]
    assert (command["output"], list(asked["answers"])) == ("from-a\n", ["blue"])
    assert "blue" in events[-1].finished.output
    assert contiguous(events), "A streamed B's events as they came"
    turn_id = events[-1].turn_id
    assert resumed_by(b, turn_id) and not resumed_by(a, turn_id), "B ran what it resumed"


async def test_a_cancel_sent_to_another_replica_stops_the_running_turn(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    run = on_a.run(session.id, "$ sleep 60")
    await on_a.decide_next(run, session.id, ONCE)
    await until(run, "resolution")  # A resumed it, and runs the command
    started = time.monotonic()
    cancelled = await on_b.call("Cancel", s.CancelRequest(session_id=session.id))
    async with asyncio.timeout(30):
        events = [e async for e in run]
    assert cancelled.turn_id == events[-1].turn_id
    assert events[-1].finished.error.reason == "CANCELLED"
    assert time.monotonic() - started < 30, "stopped, not waited out"
    got = await on_b.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_IDLE


async def test_a_cancel_sent_to_another_replica_ends_a_parked_turn(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    run = on_a.run(session.id, "$ echo never")
    request = await until(run, "approval_request")
    await on_b.call("Cancel", s.CancelRequest(session_id=session.id))
    events = [e async for e in run if not e.HasField("session_state")]
    assert events[-2].resolution.request_id == request.approval_request.request_id
    assert events[-2].resolution.via == "withdrawn"
    assert events[-1].finished.error.reason == "CANCELLED"


async def test_steer_sent_to_another_replica_reaches_the_turn(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    run = on_a.run(session.id, "$ sleep 2")
    await on_a.decide_next(run, session.id, ONCE)
    await until(run, "resolution")
    steered = await on_b.call("Steer", s.SteerRequest(session_id=session.id, text="go left"))
    events = [e async for e in run]
    assert steered.turn_id == events[-1].turn_id
    assert "Noted: go left" in events[-1].finished.output, "taken by the call after the command"


async def test_a_session_runs_one_turn_at_a_time_whichever_replica_starts_it(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()

    async def start(wire: Wire) -> str:
        try:
            events = [e async for e in wire.run(session.id, "hello")]
        except Exception as exc:
            return getattr(exc, "reason", repr(exc))
        return "finished" if events[-1].HasField("finished") else "?"

    for _ in range(5):
        outcomes = await asyncio.gather(start(on_a), start(on_b), start(on_a), start(on_b))
        assert outcomes.count("finished") >= 1
        assert set(outcomes) <= {"finished", "SESSION_BUSY"}, outcomes
    watch = s.WatchRequest(session_id=session.id)
    events = [e async for e in on_b.stream("Watch", watch)]
    kinds = [
        e.WhichOneof("kind") for e in events if e.WhichOneof("kind") in ("accepted", "finished")
    ]
    assert kinds == ["accepted", "finished"] * (len(kinds) // 2), "never two turns at once"
