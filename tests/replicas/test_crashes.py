"""What survives a replica's death: kill -9, a stalled process, a kill loop, a rolling deploy.

Replicas run with a 1.5 s turn lease (support/replicas.py): a dead replica's running turns
are taken over by a survivor within about two seconds. The bounds asserted here are ten
times that, so that a loaded machine does not fail them.
"""

from __future__ import annotations

import asyncio
import time

from support.replicas import check_log, contiguous, replay
from support.wire import Wire, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz_client import AsyncBlitz

ONCE = t.DECISION_ONCE
# A stream far longer than any test waits for: it is still streaming when killed.
ENDLESS = "stream: 200000"


async def follow_to_end(wire: Wire, session_id: str, turn_id: str) -> t.TurnEvent:
    """Follow the session on `wire` until `turn_id` finishes; its `finished` event."""
    watch = wire.stream("Watch", s.WatchRequest(session_id=session_id, follow=True))
    async with asyncio.timeout(30):
        async for event in watch:
            if event.turn_id == turn_id and event.HasField("finished"):
                await watch.aclose()
                return event
    raise AssertionError("the watch ended before the turn finished")


async def test_a_killed_replicas_running_turn_ends_on_the_survivor(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    run = on_a.run(session.id, "$ sleep 60")
    await on_a.decide_next(run, session.id, ONCE)
    resolution = await until(run, "resolution")  # A runs the command
    a.kill()
    killed = time.monotonic()
    finished = await follow_to_end(on_b, session.id, resolution.turn_id)
    assert time.monotonic() - killed < 20, "noticed within a few leases"
    assert finished.finished.error.reason == "SERVER_RESTARTED"
    assert any(line.get("event") == "turn_taken_over" for line in b.lines())
    check_log(await replay(on_b, session.id))
    got = await on_b.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_IDLE
    events = await on_b.run_all(session.id, "hello again")
    assert not events[-1].finished.HasField("error"), "the session goes on, on B"


async def test_a_stalled_replica_cannot_write_after_another_took_over(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    session = await on_a.create_session()
    run = on_a.run(session.id, "$ sleep 3\nstream: 300")
    await on_a.decide_next(run, session.id, ONCE)
    resolution = await until(run, "resolution")
    a.pause()  # SIGSTOP: its lease runs out while its command goes on
    try:
        finished = await follow_to_end(on_b, session.id, resolution.turn_id)
    finally:
        a.resume()
    assert finished.finished.error.reason == "SERVER_RESTARTED"
    # A wakes up with the command's result and 300 chunks to write, and is refused.
    deadline = time.monotonic() + 30
    while not any(line.get("event") == "turn_lost" for line in a.lines()):
        assert time.monotonic() < deadline, a.log()
        await asyncio.sleep(0.2)
    await asyncio.sleep(1)  # anything A might still try
    events = await replay(on_b, session.id)
    check_log(events)
    assert events[-1] == finished, "nothing after B's finished"
    assert not [e for e in events if e.HasField("tool_result") or e.HasField("text")]
    assert a.process is not None and a.process.poll() is None, "A lives on, and serves"
    after = await on_a.run_all(session.id, "hello from a")
    assert not after[-1].finished.HasField("error")
    check_log(await replay(on_a, session.id))


async def test_a_kill_loop_loses_nothing_committed(replicas, wires):
    pair = replicas("a", "b")
    sessions: list[str] = []
    for round_ in range(10):
        victim, survivor = pair[round_ % 2], pair[1 - round_ % 2]
        on_victim, on_survivor = wires(victim, "grpc"), wires(survivor, "connect")
        streaming = await on_victim.create_session()
        parked = await on_victim.create_session()
        sessions += [streaming.id, parked.id]
        asking = on_victim.run(parked.id, f"$ echo parked-{round_}")
        request = await until(asking, "approval_request")
        seen: list[t.TurnEvent] = []
        run = on_victim.run(streaming.id, ENDLESS)
        async for event in run:
            seen.append(event)
            if len(seen) >= 20:
                break
        victim.kill()
        await on_victim.close()
        # The streaming turn: ended by the survivor, everything seen before the kill kept.
        await follow_to_end(on_survivor, streaming.id, seen[0].turn_id)
        stored = await replay(on_survivor, streaming.id)
        check_log(stored)
        assert stored[: len(seen)] == seen, f"round {round_}: what a client saw is stored"
        assert stored[-1].finished.error.reason == "SERVER_RESTARTED"
        # The parked turn: owned by no one, resumed where the decision arrives.
        await on_survivor.decide(parked.id, request, ONCE)
        done = await follow_to_end(on_survivor, parked.id, request.turn_id)
        assert not done.finished.HasField("error"), done
        tool = [e for e in await replay(on_survivor, parked.id) if e.HasField("tool_result")]
        assert tool[0].tool_result.result["output"] == f"parked-{round_}\n"
        check_log(await replay(on_survivor, parked.id))
        victim.start()  # back, for the next round
    on_a = wires(pair[0], "grpc")
    for session_id in sessions:
        check_log(await replay(on_a, session_id))


async def test_a_rolling_deploy_hands_streams_to_the_other_replica(replicas, wires):
    a, b = replicas("a", "b")
    a.stop()
    a.start("--drain-timeout=10")
    session = await wires(b, "connect").create_session()
    # The SDK, given both addresses, uses the first until it goes away.
    target = f"ipv4:{a.grpc_target},{b.grpc_target}"
    events: list[t.TurnEvent] = []
    async with AsyncBlitz(target) as blitz:
        async for event in blitz.run(session.id, "$ sleep 2\nstream: 300"):
            events.append(event)
            if event.HasField("approval_request"):
                request_id = event.approval_request.request_id
                await blitz.decide(session.id, request_id, "once")
            elif event.HasField("resolution"):
                a.process.send_signal(15)  # type: ignore[union-attr]  # SIGTERM, as a deploy
    assert await asyncio.to_thread(a.process.wait, 30) == 0  # type: ignore[union-attr]
    assert not events[-1].finished.HasField("error"), "the turn ended within the grace"
    assert contiguous(events), "resumed on B without a gap or a repeat"
    stored = await replay(wires(b, "grpc"), session.id)
    assert stored == events
    assert any(line.get("event") == "ended open streams" for line in a.lines())
    assert sum(e.HasField("text") for e in events) > 0


async def test_calls_a_draining_replica_refuses_are_sent_to_the_other(replicas, wires):
    a, b = replicas("a", "b")
    a.stop()
    a.start("--drain-delay=3")  # on SIGTERM, refuses calls for 3 s before its ports close
    session = await wires(b, "connect").create_session()
    async with AsyncBlitz(f"ipv4:{a.grpc_target},{b.grpc_target}") as blitz:
        assert (await blitz.session(session.id)).id == session.id  # through A
        since = a.log_path.stat().st_size
        a.process.send_signal(15)  # type: ignore[union-attr]  # SIGTERM
        deadline = time.monotonic() + 30
        while not any(line.get("event") == "draining" for line in a.lines(since)):
            assert time.monotonic() < deadline, a.log()
            await asyncio.sleep(0.05)
        # A answers SHUTTING_DOWN until its ports close; the SDK sends the call again.
        got = await blitz.session(session.id)
        assert got.id == session.id
        made = await blitz.create_session()
    assert await asyncio.to_thread(a.process.wait, 30) == 0  # type: ignore[union-attr]
    assert (await wires(b, "grpc").call("GetSession", s.GetSessionRequest(session_id=made.id))).id
