"""Webhooks on two replicas of one PostgreSQL: each delivery is claimed by exactly one, and
a replica that dies mid-delivery leaves it to the other.

Each replica expands the outbox rows of the events it stores and claims due deliveries
with `FOR UPDATE SKIP LOCKED`; the receiver checks every signature and counts each
`webhook-id`. Bounds are tens of seconds.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from support.receiver import Receiver
from support.webhooks import create

from blitz.store import OUTBOX_KINDS
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

FLAGS = ("--webhook-allow-private=127.0.0.0/8", "--webhook-retry-delay=0.2")
ONCE = t.DECISION_ONCE


async def test_two_replicas_deliver_each_event_exactly_once(replicas, wires):
    a, b = replicas("a", "b", extra=FLAGS)
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    with Receiver() as rx:
        made = await create(on_a, rx.url, ["*"])
        sessions = []
        for n in range(6):
            here, there = (on_a, on_b) if n % 2 else (on_b, on_a)
            session = await here.create_session(title=f"session {n}")
            run = here.run(session.id, "$ echo hi\nAll done.")
            # Decided on the other replica, which resumes the turn: both store its events.
            await there.decide_next(run, session.id, ONCE)
            async for _ in run:
                pass
            sessions.append(session.id)
        expected: dict[str, list[int]] = {}
        for session_id in sessions:
            replay = on_b.stream("Watch", s.WatchRequest(session_id=session_id))
            expected[session_id] = [
                e.seq async for e in replay if e.WhichOneof("kind") in OUTBOX_KINDS
            ]
        total = sum(len(seqs) for seqs in expected.values())
        await rx.wait_for(lambda got: len(got) >= total)
        await asyncio.sleep(2)  # anything a second replica would send again
        payloads = rx.verified(made.secret)
        ids = Counter(r.headers["webhook-id"] for r in rx.requests())
    assert len(payloads) == total and set(ids.values()) == {1}, "each exactly once"
    for session_id, seqs in expected.items():
        got = [p["data"]["seq"] for p in payloads if p["data"]["session_id"] == session_id]
        assert got == seqs, "all of a session's, in seq order"
    senders = {line.get("event") for r in (a, b) for line in r.lines()}
    assert "webhook_attempt" in senders


async def test_a_replica_that_dies_mid_delivery_leaves_it_to_another(replicas, wires):
    released = threading.Event()
    first = threading.Event()

    def answer(_):
        if not first.is_set():
            first.set()
            released.wait(60)  # A's attempt hangs until A is dead
        return 200, {}, b"ok"

    with Receiver(answer) as rx:
        [a] = replicas("a", extra=(*FLAGS, "--webhook-timeout=8"))
        on_a = wires(a, "grpc")
        made = await create(on_a, rx.url, ["finished"])
        session = await on_a.create_session()
        await on_a.run_all(session.id, "hello")
        await rx.wait_for(lambda got: len(got) == 1)  # A holds it, hanging
        [b] = replicas("b", extra=(*FLAGS, "--webhook-timeout=8"))
        a.kill()
        released.set()
        first_try, second_try = await rx.wait_for(lambda got: len(got) >= 2, within=60)
        rx.verified(made.secret)
    assert first_try.headers["webhook-id"] == second_try.headers["webhook-id"]
    assert any(line.get("event") == "webhook_attempt" for line in b.lines()), "B sent it"
