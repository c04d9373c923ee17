"""What a crash can do to webhooks: nothing is lost, and a duplicate has the same id.

A real `blitz serve` process on SQLite stores events whose receiver is down (every attempt
fails), and is killed with SIGKILL mid-way: deliveries pending, retries due, a turn parked.
The receiver comes up, the server starts again on the same data, and every event a webhook
hears of arrives: none lost, in seq order, and any event that arrives twice carries the
same `webhook-id` and the same body.
"""

from __future__ import annotations

from collections import defaultdict

from support.receiver import Receiver
from support.replicas import Replica
from support.servers import free_port
from support.wire import decide, drive, open_wire, until

from blitz.store import OUTBOX_KINDS
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

FLAGS = ("--webhook-allow-private=127.0.0.0/8", "--webhook-retry-delay=0.2")


async def test_a_receiver_down_while_the_server_is_killed_gets_every_event_after_it(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    data = tmp_path / "data"
    (tmp_path / "logs").mkdir()
    server = Replica("solo", database=str(data / "blitz.db"), data_dir=data, logs=tmp_path / "logs")
    server.start(*FLAGS)
    try:
        wire = open_wire("grpc", server)  # type: ignore[arg-type]  # it has both addresses
        made = await wire.call("CreateWebhook", wh.CreateWebhookRequest(url=url, events=["*"]))
        session = await wire.create_session()
        await drive(wire, session.id, "$ echo one", decide(wire, session.id, t.DECISION_ONCE))
        await wire.run_all(session.id, "hello")
        parked = wire.run(session.id, "$ echo parked")
        await until(parked, "approval_request")
        await parked.aclose()
        await wire.close()
        server.kill()  # SIGKILL: deliveries pending, retries due, a turn parked
        with Receiver(port=port) as rx:
            server.start(*FLAGS)
            wire = open_wire("connect", server)  # type: ignore[arg-type]
            try:
                stored = [
                    e
                    async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))
                    if e.WhichOneof("kind") in OUTBOX_KINDS
                ]
                expected = [e.seq for e in stored]
                await rx.wait_for(
                    lambda got: {r.payload()["data"]["seq"] for r in got} >= set(expected)
                )
                payloads = rx.verified(made.secret)
            finally:
                await wire.close()
    finally:
        server.close()
    seqs = [p["data"]["seq"] for p in payloads]
    assert sorted(set(seqs)) == expected, "none lost, none made up"
    first_seen = list(dict.fromkeys(seqs))
    assert first_seen == sorted(first_seen), "in seq order"
    by_id: defaultdict[str, set[bytes]] = defaultdict(set)
    for request in rx.requests():
        by_id[request.headers["webhook-id"]].add(request.body)
    assert len(by_id) == len(expected), "one webhook-id per event"
    assert all(len(bodies) == 1 for bodies in by_id.values()), "a duplicate is the same message"
