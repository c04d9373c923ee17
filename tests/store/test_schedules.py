"""The schedules' part of the store contract (docs/schedules.md), on both engines: a tick
claimed once however many claim it, firings kept and taken over once, schedules listed,
found due, changed and deleted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from blitz.config import Settings
from blitz.store import FiringRecord, FiringState, ScheduleRecord, Store, open_store
from blitz.store.schedule_records import FIRINGS_KEPT
from blitz.v1 import schedules_pb2 as sc

pytestmark = pytest.mark.engines("sqlite", "postgres")


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with open_store(settings.database) as opened:
        yield opened


def schedule(sid: str, owner: str = "alice", *, next_fire: float | None = 100.0) -> ScheduleRecord:
    spec = sc.Schedule(cron="* * * * * *", prompt="hello")
    state = sc.SCHEDULE_STATE_ACTIVE if next_fire is not None else sc.SCHEDULE_STATE_PAUSED
    return ScheduleRecord(
        id=sid,
        owner=owner,
        spec=spec.SerializeToString(),
        state=state,
        next_fire=next_fire,
        anchor=50.0,
        create_time=len(sid),
        update_time=len(sid),
    )


def firing(sid: str, tick: float, holder: str = "me", **kw: object) -> FiringRecord:
    return FiringRecord(
        schedule_id=sid, tick_time=tick, fire_time=tick, via="tick", holder=holder, **kw
    )  # type: ignore[arg-type]


async def test_schedules_are_kept_listed_by_owner_changed_and_deleted(store):
    await store.add_schedule(schedule("sc_a", "alice"))
    await store.add_schedule(schedule("sc_bb", "bob"))
    assert await store.get_schedule("sc_a") == schedule("sc_a", "alice")
    assert [r.id for r in await store.list_schedules("alice")] == ["sc_a"]
    assert [r.id for r in await store.list_schedules()] == ["sc_a", "sc_bb"]
    changed = schedule("sc_a", "alice", next_fire=None)
    assert await store.update_schedule(changed)
    assert await store.get_schedule("sc_a") == changed
    await store.add_firing(firing("sc_a", 1.0))
    assert await store.delete_schedule("sc_a")
    assert await store.get_schedule("sc_a") is None
    assert await store.list_firings("sc_a", limit=10) == []
    assert not await store.delete_schedule("sc_a")


async def test_only_active_schedules_are_due(store):
    await store.add_schedule(schedule("sc_late", next_fire=90.0))
    await store.add_schedule(schedule("sc_now", next_fire=100.0))
    await store.add_schedule(schedule("sc_later", next_fire=200.0))
    await store.add_schedule(schedule("sc_paused", next_fire=None))
    assert [r.id for r in await store.due_schedules(100.0, limit=10)] == ["sc_late", "sc_now"]
    assert await store.next_due() == 90.0


async def test_a_tick_is_claimed_once_however_many_claim_it(store, settings):
    await store.add_schedule(schedule("sc_a", next_fire=100.0))
    async with open_store(settings.database) as other:
        claims = [
            (store if n % 2 else other).claim_tick(
                "sc_a", tick=100.0, next_fire=101.0, firing=firing("sc_a", 100.0, f"p{n}")
            )
            for n in range(6)
        ]
        won = await asyncio.gather(*claims)
    assert won.count(True) == 1
    [fired] = await store.list_firings("sc_a", limit=10)
    assert fired.holder == f"p{won.index(True)}"
    assert (await store.get_schedule("sc_a")).next_fire == 101.0
    assert not await store.claim_tick("sc_a", tick=100.0, next_fire=102.0, firing=None)


async def test_a_skipped_tick_moves_on_without_a_firing_and_a_paused_one_is_not_claimed(store):
    await store.add_schedule(schedule("sc_a", next_fire=100.0))
    assert await store.claim_tick("sc_a", tick=100.0, next_fire=160.0, firing=None)
    assert await store.list_firings("sc_a", limit=10) == []
    paused = schedule("sc_a", next_fire=160.0)
    paused.state = sc.SCHEDULE_STATE_PAUSED
    await store.update_schedule(paused)
    assert not await store.claim_tick("sc_a", tick=160.0, next_fire=220.0, firing=None)


async def test_a_firing_is_written_by_its_holder_only_and_taken_over_once(store, settings):
    await store.add_schedule(schedule("sc_a"))
    assert await store.add_firing(firing("sc_a", 10.0, "dead"))
    assert not await store.add_firing(firing("sc_a", 10.0, "again")), "one row per tick"
    assert await store.add_firing(firing("sc_a", 50.0, "alive"))
    async with open_store(settings.database) as other:
        taken = await asyncio.gather(
            store.take_over_firings("p1", now=60.0, before=30.0),
            other.take_over_firings("p2", now=60.0, before=30.0),
        )
    [[took]] = [t for t in taken if t]
    assert (took.tick_time, took.fire_time) == (10.0, 60.0)
    assert not await store.update_firing(firing("sc_a", 10.0, ""), holder="dead")
    done = firing("sc_a", 10.0, "", state=FiringState.FIRED, session_id="s_1", turn_id="t_1")
    assert await store.update_firing(done, holder=took.holder)
    assert (await store.list_firings("sc_a", limit=1, before=50.0))[0] == FiringRecord(
        "sc_a", 10.0, 60.0, "tick", "", FiringState.FIRED, "s_1", "t_1", ""
    )
    assert await store.take_over_firings("p3", now=70.0, before=65.0) == [
        FiringRecord("sc_a", 50.0, 70.0, "tick", "p3")
    ], "a fired one is never taken"


async def test_firings_are_listed_latest_tick_first_and_only_the_latest_are_kept(store):
    await store.add_schedule(schedule("sc_a", next_fire=0.0))
    for tick in range(FIRINGS_KEPT + 5):
        assert await store.claim_tick(
            "sc_a", tick=float(tick), next_fire=float(tick + 1), firing=firing("sc_a", tick)
        )
    kept = await store.list_firings("sc_a", limit=1000)
    assert len(kept) == FIRINGS_KEPT
    assert kept[0].tick_time == FIRINGS_KEPT + 4
    page = await store.list_firings("sc_a", limit=2, before=10.0)
    assert [f.tick_time for f in page] == [9.0, 8.0]


async def test_a_tick_fired_already_still_moves_the_schedule_on(store):
    """A stale next tick (an edit that wrote back what it read before a claim) whose
    firing exists: not claimed again, but not stuck there either."""
    await store.add_schedule(schedule("sc_a", next_fire=100.0))
    await store.add_firing(firing("sc_a", 100.0))
    claimed = await store.claim_tick(
        "sc_a", tick=100.0, next_fire=101.0, firing=firing("sc_a", 100.0)
    )
    assert not claimed
    assert (await store.get_schedule("sc_a")).next_fire == 101.0


async def test_an_edit_of_the_spec_alone_leaves_the_next_tick_as_claims_moved_it(store):
    read = schedule("sc_a", next_fire=100.0)
    await store.add_schedule(read)
    assert await store.claim_tick("sc_a", tick=100.0, next_fire=101.0, firing=None)
    read.spec = sc.Schedule(cron="* * * * * *", prompt="edited").SerializeToString()
    assert await store.update_schedule(read, timing=False)
    stored = await store.get_schedule("sc_a")
    assert (stored.next_fire, stored.spec) == (101.0, read.spec)


async def test_schedules_are_listed_each_with_its_latest_firing_in_one_query(store, monkeypatch):
    await store.add_schedule(schedule("sc_a", "alice"))
    await store.add_schedule(schedule("sc_bb", "alice"))
    await store.add_schedule(schedule("sc_ccc", "bob"))
    for tick in (5.0, 30.0, 20.0):
        await store.add_firing(firing("sc_a", tick))
    done = firing("sc_ccc", 7.0, "", state=FiringState.FAILED, error="SESSION_BUSY: busy")
    await store.add_firing(done)
    queries: list[str] = []
    fetch = store._fetch

    async def counted(sql, args):
        queries.append(sql)
        return await fetch(sql, args)

    monkeypatch.setattr(store, "_fetch", counted)
    listed = await store.list_schedules_with_last_firing()
    assert len(queries) == 1
    assert [(rec.id, last) for rec, last in listed] == [
        ("sc_a", firing("sc_a", 30.0)),
        ("sc_bb", None),
        ("sc_ccc", done),
    ]
    assert listed[0][0] == schedule("sc_a", "alice")
    alices = await store.list_schedules_with_last_firing("alice")
    assert [rec.id for rec, _ in alices] == ["sc_a", "sc_bb"]
