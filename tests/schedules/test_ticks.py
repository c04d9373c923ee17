"""The scheduler: ticks fire on time, pause and resume, and ticks missed while no server ran
are caught up once or skipped; in process, on a real SQLite file.

Bounds are generous: a loaded two-core machine may get to a tick a few seconds late, and
the tests check what fired, not how fast.
"""

from __future__ import annotations

import asyncio
import time

from google.protobuf.field_mask_pb2 import FieldMask
from support.in_process import in_process
from support.schedules import at as _at
from support.schedules import create, every, fired, firings, turn_of
from support.wire import Wire

from blitz.config import Settings
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s


async def _state(wire: Wire, schedule_id: str, state: int) -> sc.Schedule:
    return await wire.call(
        "UpdateSchedule",
        sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=schedule_id, state=state),
            update_mask=FieldMask(paths=["state"]),
        ),
    )


async def test_a_cron_of_every_second_fires_each_tick_in_a_session_of_its_own(wire: Wire):
    made = await create(wire, cron="* * * * * *", prompt="tick", catch_up=sc.CATCH_UP_ONCE)
    # Each with its turn: a firing listed while it is under way has none yet.
    found = await fired(wire, made.id, 4, within=30, done=lambda f: all(x.turn_id for x in f))
    await _state(wire, made.id, sc.SCHEDULE_STATE_PAUSED)
    assert len(found) >= 4
    ticks = [_at(f.tick_time) for f in found]
    assert all(tick == int(tick) for tick in ticks), "a cron's ticks are whole seconds"
    assert ticks == sorted(set(ticks)), "each tick fires once"
    assert ticks[0] >= _at(made.create_time)
    on_time = [f for f in found if f.via == "tick"]
    assert len(on_time) >= 3, [f.via for f in found]
    for firing in on_time:
        assert 0 <= _at(firing.fire_time) - _at(firing.tick_time) < 5.0
    assert len({f.session_id for f in found}) == len(found), "a new session each firing"
    for firing in found:
        assert firing.error == ""
        assert (await turn_of(wire, firing)).turn.text == "tick"


async def test_a_paused_schedule_does_not_fire_and_fires_again_once_resumed(wire: Wire):
    made = await create(wire, every=every(1), session_id=(await wire.create_session()).id)
    await fired(wire, made.id, 1, within=30)
    await _state(wire, made.id, sc.SCHEDULE_STATE_PAUSED)
    before = len(await firings(wire, made.id))
    await asyncio.sleep(2.5)
    assert len(await firings(wire, made.id)) == before, "no tick fires while paused"
    resumed = await _state(wire, made.id, sc.SCHEDULE_STATE_ACTIVE)
    again = await fired(wire, made.id, before + 1, within=30)
    assert len(again) > before
    assert _at(again[-1].tick_time) >= _at(resumed.update_time), "nothing paused is caught up"


async def test_a_missed_tick_fires_once_on_start_or_is_skipped_as_catch_up_says(
    settings: Settings,
):
    """Two schedules every 6 s; the server stops before their first tick and starts again
    after it: ONCE fires it once at the start, SKIP fires only the tick after."""
    async with in_process(settings) as wire:
        once = await create(wire, every=every(6), catch_up=sc.CATCH_UP_ONCE)
        skip = await create(wire, every=every(6), catch_up=sc.CATCH_UP_SKIP)
    missed = _at(once.next_fire_time)
    await asyncio.sleep(max(0.0, missed + 1.0 - time.time()))
    async with in_process(settings) as wire:
        started = time.time()
        caught = await fired(wire, once.id, 1, within=30)
        assert [(f.via, _at(f.tick_time)) for f in caught] == [("catch_up", missed)]
        assert _at(caught[0].fire_time) >= started - 0.5
        assert caught[0].session_id and caught[0].error == ""
        assert await firings(wire, skip.id) == [], "SKIP fires nothing for the missed tick"
        view = await wire.call("GetSchedule", sc.GetScheduleRequest(schedule_id=skip.id))
        following = _at(view.next_fire_time)
        assert following > missed
        later = await fired(wire, skip.id, 1, within=following - time.time() + 30)
        assert [f.via for f in later] == ["tick"]
        assert _at(later[0].tick_time) == following


async def test_a_firing_left_half_done_by_a_dead_process_is_finished_once_at_start(
    settings: Settings,
):
    """A firing claimed but never carried out (the process died): the next start starts its
    turn, in one session, once."""
    async with in_process(settings) as wire:
        made = await create(wire, cron="0 3 * * *")
    from blitz.store import FiringRecord, open_store

    tick = time.time() - 5
    async with open_store(settings.database) as store:
        firing = FiringRecord(
            schedule_id=made.id, tick_time=tick, fire_time=tick, via="tick", holder="dead/1/x"
        )
        assert await store.add_firing(firing)
    async with in_process(settings) as wire:
        found = await fired(wire, made.id, done=lambda found: bool(found[0].turn_id))
        assert len(found) == 1 and found[0].turn_id and found[0].error == ""
        listed = await wire.call(
            "ListSessions", s.ListSessionsRequest(labels={"schedule_id": made.id})
        )
        assert [x.id for x in listed.sessions] == [found[0].session_id]
