"""One principal's dead receivers cannot delay another principal's webhooks.

Alice makes 40 webhooks to a receiver that accepts the connection and never answers, so
her deliveries hold workers for the whole attempt timeout, are retried and hold them
again. She may hold half the workers and no more; Bob's `finished` reaches his receiver
within 2 s of the event, every time, through more than one of her timeouts. The rule
itself (`core/webhooks/shares.py`) is checked on its own below.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.webhooks import LOOPBACK, create
from support.wire import Wire, open_wire

from blitz.config import Settings
from blitz.core.webhooks.shares import PER_WEBHOOK, Shares
from blitz.server import RunningServer, running_server
from blitz.store import DeliveryRecord, DeliveryState
from blitz.store.webhook_records import DECLARED
from blitz.v1 import turn_pb2 as t

TOKENS = "alice:alice-token-1234,bob:bob-token-5678"
DEAD = 40
# Seconds an attempt waits on the silent receiver: Bob's turns span two of them.
TIMEOUT = 3.0
LATE = 2.0


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[RunningServer]:
    hooked = replace(
        settings,
        tokens=TOKENS,
        webhook_allow_private=LOOPBACK,
        webhook_timeout=TIMEOUT,
        webhook_retry_delay=0.3,
    )
    async with running_server(hooked) as running:
        yield running


@pytest.fixture
async def wires(server: RunningServer) -> AsyncIterator[dict[str, Wire]]:
    opened = {
        "alice": open_wire("grpc", server, {"authorization": "Bearer alice-token-1234"}),
        "bob": open_wire("connect", server, {"authorization": "Bearer bob-token-5678"}),
    }
    yield opened
    for wire in opened.values():
        await wire.close()


def stored_at(events: list[t.TurnEvent]) -> float:
    """When the turn's `finished` was stored (Unix seconds)."""
    [finished] = [e for e in events if e.HasField("finished")]
    return finished.time.seconds + finished.time.nanos / 1e9


@pytest.mark.engines("sqlite", "postgres")
async def test_forty_dead_receivers_of_one_principal_leave_anothers_webhooks_on_time(
    settings, server, wires, silent
):
    alice, bob = wires["alice"], wires["bob"]
    half = settings.webhook_workers // 2
    for _ in range(DEAD):
        await create(alice, silent.url, ["finished"])
    hers = await alice.create_session()
    for n in range(2):
        await alice.run_all(hers.id, f"alice {n}")
    await silent.wait_for_open(half)
    with Receiver() as his:
        await create(bob, his.url, ["finished"])
        mine = await bob.create_session()
        lags = []
        for n in range(1, 6):
            events = await bob.run_all(mine.id, f"bob {n}")
            got = await his.wait_for(lambda r, n=n: len(r) >= n)
            lags.append(round(got[n - 1].at - stored_at(events), 3))
            await asyncio.sleep(TIMEOUT / 2)
    assert max(lags) < LATE, f"Bob's finished arrived after {lags} s"
    assert silent.most == half, "Alice held her share of the workers, and no more"


def claimed(id: str, principal: str, webhook_id: str = "", due: float = 0.0) -> DeliveryRecord:
    return DeliveryRecord(
        id=id,
        webhook_id=webhook_id or f"wh_{id}",
        message_id=f"msg_{id}",
        kind="finished",
        session_id=f"s_{id}",
        turn_id="t1",
        seq=1,
        body=b"{}",
        state=DeliveryState.PENDING,
        tries=0,
        attempts=[],
        next_attempt=due,
        deadline=1e12,
        event_time=0.0,
        create_time=0.0,
        principal=principal,
    )


def test_a_principals_share_is_what_leaves_room_for_one_more():
    shares = Shares(12)
    alice = [claimed(f"a{n}", "alice") for n in range(12)]
    assert [shares.take(d) for d in alice] == [True] * 6 + [False] * 6, "alone: half"
    assert shares.fairness().skip == ("alice",)
    assert shares.take(claimed("b0", "bob")) and shares.share("bob") == 4, "two: a third"
    assert not shares.take(alice[-1]), "past her share now: nothing more until hers end"
    for n in range(2):
        shares.let_go(f"a{n}")
    assert not shares.take(alice[-1]), "four held: her share"
    shares.let_go("a2")
    assert shares.take(alice[-1]) and shares.free == 12 - 4 - 1


def test_a_webhook_holds_at_most_its_own_limit_whoever_owns_it():
    shares = Shares(64)
    same = [claimed(f"d{n}", "alice", webhook_id="wh_1") for n in range(PER_WEBHOOK + 1)]
    assert [shares.take(d) for d in same] == [True] * PER_WEBHOOK + [False]
    assert shares.full_webhooks() == ["wh_1"]


def test_claimed_deliveries_get_workers_round_robin_the_least_busy_first():
    shares = Shares(32)
    assert shares.take(claimed("a0", "alice"))
    got = [claimed("a1", "alice", due=1.0), claimed("a2", "alice", due=2.0),
           claimed("b1", "bob", due=3.0), claimed("b2", "bob", due=4.0),
           claimed("c1", DECLARED, due=5.0)]  # fmt: skip
    assert [d.id for d in shares.order(got)] == ["b1", "c1", "a1", "b2", "a2"]
