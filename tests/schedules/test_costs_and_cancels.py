"""What a client cannot cut short or make costly: a firing asked for now still finishes
whole when its caller goes away; a listing does not read each schedule's firings one by
one; the scheduler reads a schedule's spec once, not at every tick; a refused value names
its limit as the session calls do. In process, on a real SQLite file."""

from __future__ import annotations

import asyncio

import pytest
from support.in_process import in_process
from support.schedules import create, every, fired, firings
from support.wire import expect_error

from blitz.config import Settings
from blitz.core.api import validation
from blitz.core.schedules import checks
from blitz.store import SqliteStore
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s

DAILY = "0 3 * * *"


async def test_a_run_now_whose_caller_is_cancelled_still_starts_its_turn(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    """The caller is cancelled while the firing has made its session and not yet started
    its turn: the firing goes on to start it, and is recorded as fired."""
    written = asyncio.Event()
    go_on = asyncio.Event()
    update_firing = SqliteStore.update_firing

    async def held(self, firing, *, holder):
        if firing.session_id and not firing.turn_id and not go_on.is_set():
            written.set()
            await go_on.wait()  # the firing's session is made; its turn not yet started
        return await update_firing(self, firing, holder=holder)

    monkeypatch.setattr(SqliteStore, "update_firing", held)
    async with in_process(settings) as wire:
        made = await create(wire, cron=DAILY, prompt="whole")
        call = asyncio.create_task(
            wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=made.id))
        )
        await asyncio.wait_for(written.wait(), 30)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        go_on.set()
        [firing] = await fired(wire, made.id, done=lambda found: bool(found[0].turn_id))
        assert (firing.via, firing.error) == ("run_now", "")
        assert firing.session_id and firing.turn_id
        turn = await wire.call(
            "GetTurn", s.GetTurnRequest(session_id=firing.session_id, turn_id=firing.turn_id)
        )
        assert turn.turn.text == "whole"


async def test_a_listing_reads_no_schedules_firings_one_by_one(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    async with in_process(settings) as wire:
        session = await wire.create_session()
        quiet = await create(wire, cron=DAILY, title="quiet")
        busy = await create(wire, cron=DAILY, session_id=session.id, title="busy")
        for _ in range(2):
            await wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=busy.id))
        latest = (await firings(wire, busy.id))[-1]
        reads: list[str] = []
        list_firings = SqliteStore.list_firings

        async def counted(self, schedule_id, **kw):
            reads.append(schedule_id)
            return await list_firings(self, schedule_id, **kw)

        monkeypatch.setattr(SqliteStore, "list_firings", counted)
        listed = await wire.call("ListSchedules", sc.ListSchedulesRequest())
    assert reads == []
    assert [x.id for x in listed.schedules] == [quiet.id, busy.id]
    assert not listed.schedules[0].HasField("last_firing")
    assert listed.schedules[1].last_firing == latest


async def test_the_scheduler_reads_a_schedules_spec_once_not_at_every_tick(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    read: list[str] = []
    cron = checks._cron

    def counted(expression: str) -> str:
        read.append(expression)
        return cron(expression)

    monkeypatch.setattr(checks, "_cron", counted)
    async with in_process(settings) as wire:
        made = await create(wire, cron="* * * * * *", session_id=(await wire.create_session()).id)
        checked = len(read)  # CreateSchedule's checks (the scheduler's reading may be in too)
        found = await fired(wire, made.id, 3, within=30)
        scheduler_reads = len(read) - checked
    assert len(found) >= 3
    assert scheduler_reads <= 1, f"{scheduler_reads} reads for {len(found)} ticks"


TEXT_MAX = validation.CLIENT_LIMITS["turn_text_chars"]
TITLE_MAX = validation.CLIENT_LIMITS["title_chars"]


@pytest.mark.parametrize(
    ("fields", "field", "limit"),
    [
        ({"prompt": "x" * (TEXT_MAX + 1)}, "prompt", TEXT_MAX),
        ({"session": sc.SessionTemplate(title="t" * (TITLE_MAX + 1))}, "session.title", TITLE_MAX),
        ({"session": sc.SessionTemplate(model="m" * 257)}, "session.model", 256),
    ],
)
async def test_a_value_over_its_limit_is_refused_naming_the_limit(
    settings: Settings, fields, field, limit
):
    """The limits of the turn and the session a firing makes, as RunTurn and CreateSession
    name them."""
    async with in_process(settings) as wire:
        error = await expect_error(
            create(wire, every=every(60), **fields), "invalid_argument", "INVALID_ARGUMENT"
        )
    assert (error.metadata["field"], error.metadata["limit"]) == (f"schedule.{field}", str(limit))
