"""ScheduleService as a client uses it: making, reading, changing and deleting schedules,
and firing one now; in process, and over gRPC and Connect (`parity`)."""

from __future__ import annotations

import time

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from support.schedules import create, every, finished, firings, turn_of
from support.wire import Wire, expect_error

from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s

pytestmark = pytest.mark.parity

DAILY = "0 3 * * *"


async def test_a_schedule_is_made_active_with_its_next_tick_in_its_time_zone(wire: Wire):
    made = await create(
        wire, title="nightly", cron=DAILY, time_zone="Europe/Paris", prompt="bump the deps"
    )
    assert made.id.startswith("sc_")
    assert made.state == sc.SCHEDULE_STATE_ACTIVE
    assert (made.title, made.cron, made.prompt) == ("nightly", DAILY, "bump the deps")
    fire = made.next_fire_time.ToDatetime()
    assert fire.timestamp() > time.time()
    assert (fire.minute, fire.second) == (0, 0)
    assert fire.hour in (1, 2), "03:00 in Paris is 01:00 or 02:00 UTC"
    assert not made.HasField("last_firing")
    got = await wire.call("GetSchedule", sc.GetScheduleRequest(schedule_id=made.id))
    assert got == made
    listed = await wire.call("ListSchedules", sc.ListSchedulesRequest())
    assert [x.id for x in listed.schedules] == [made.id]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"cron": "61 * * * *"}, "schedule.cron"),
        ({"cron": "* * * *"}, "schedule.cron"),
        ({"cron": "0 0 30 2 *"}, "schedule.cron"),
        ({"cron": "@sometimes"}, "schedule.cron"),
        ({"cron": DAILY, "time_zone": "Mars/Olympus"}, "schedule.time_zone"),
        ({"cron": DAILY, "time_zone": "../../etc/passwd"}, "schedule.time_zone"),
        ({"every": every(0.5)}, "schedule.every"),
        ({}, "schedule.cron"),
        ({"cron": DAILY, "prompt": "  "}, "schedule.prompt"),
        ({"cron": DAILY, "busy": 9}, "schedule.busy"),
        (
            {"cron": DAILY, "session": sc.SessionTemplate(labels={"-bad": "x"})},
            "schedule.session.labels",
        ),
    ],
)
async def test_a_wrong_schedule_is_refused_naming_its_field(wire: Wire, fields, field):
    error = await expect_error(create(wire, **fields), "invalid_argument", "INVALID_ARGUMENT")
    assert error.metadata["field"] == field
    listed = await wire.call("ListSchedules", sc.ListSchedulesRequest())
    assert list(listed.schedules) == []


async def test_a_schedule_of_a_session_the_caller_has_not_is_refused(wire: Wire):
    await expect_error(
        create(wire, cron=DAILY, session_id="s_nobody"), "not_found", "SESSION_NOT_FOUND"
    )


async def test_pause_and_resume(wire: Wire):
    made = await create(wire, every=every(3600))
    paused = await wire.call(
        "UpdateSchedule",
        sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=made.id, state=sc.SCHEDULE_STATE_PAUSED),
            update_mask=FieldMask(paths=["state"]),
        ),
    )
    assert paused.state == sc.SCHEDULE_STATE_PAUSED
    assert not paused.HasField("next_fire_time")
    resumed = await wire.call(
        "UpdateSchedule",
        sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=made.id, state=sc.SCHEDULE_STATE_ACTIVE),
            update_mask=FieldMask(paths=["state"]),
        ),
    )
    assert resumed.state == sc.SCHEDULE_STATE_ACTIVE
    assert resumed.next_fire_time.ToDatetime().timestamp() > time.time() + 3000


async def test_an_update_changes_what_its_mask_names_and_nothing_else(wire: Wire):
    made = await create(wire, title="t", cron=DAILY, prompt="one")
    changed = await wire.call(
        "UpdateSchedule",
        sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=made.id, every=every(60), prompt="two", title="ignored"),
            update_mask=FieldMask(paths=["every", "prompt"]),
        ),
    )
    assert (changed.WhichOneof("when"), changed.every.seconds) == ("every", 60)
    assert (changed.prompt, changed.title) == ("two", "t")
    assert changed.next_fire_time.ToDatetime().timestamp() < time.time() + 61
    error = await expect_error(
        wire.call(
            "UpdateSchedule",
            sc.UpdateScheduleRequest(
                schedule=sc.Schedule(id=made.id), update_mask=FieldMask(paths=["owner"])
            ),
        ),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "update_mask"


async def test_run_now_starts_a_turn_in_a_new_labelled_session_as_the_template_says(wire: Wire):
    made = await create(
        wire,
        title="triage",
        cron=DAILY,
        prompt="hello from a schedule",
        session=sc.SessionTemplate(title="{schedule} on {date}", labels={"team": "infra"}),
    )
    firing = await wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=made.id))
    assert (firing.via, firing.error) == ("run_now", "")
    assert firing.session_id and firing.turn_id
    session = await wire.call("GetSession", s.GetSessionRequest(session_id=firing.session_id))
    assert dict(session.labels) == {"team": "infra", "schedule_id": made.id}
    assert session.title.startswith("triage on 20")

    turn = await finished(wire, firing)
    assert turn.state == s.TURN_STATE_FINISHED
    assert turn.turn.text == "hello from a schedule"
    again = await wire.call("GetSchedule", sc.GetScheduleRequest(schedule_id=made.id))
    assert again.last_firing == firing
    assert [f.turn_id for f in await firings(wire, made.id)] == [firing.turn_id]


async def test_a_firing_in_a_fixed_session_queues_behind_its_turn(wire: Wire):
    session = await wire.create_session(title="fixed")
    stream = wire.run(session.id, "$ echo wait")
    async for event in stream:
        if event.HasField("approval_request"):
            break
    made = await create(wire, cron=DAILY, session_id=session.id, prompt="after it")
    firing = await wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=made.id))
    assert (firing.session_id, firing.error) == (session.id, "")
    assert (await turn_of(wire, firing)).state == s.TURN_STATE_QUEUED
    await stream.aclose()
    rejecting = await create(
        wire, cron=DAILY, session_id=session.id, prompt="not now", busy=s.BUSY_STRATEGY_REJECT
    )
    refused = await wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=rejecting.id))
    assert refused.error.startswith("SESSION_BUSY: ") and not refused.turn_id


async def test_a_deleted_schedule_is_not_found(wire: Wire):
    made = await create(wire, cron=DAILY)
    await wire.call("DeleteSchedule", sc.DeleteScheduleRequest(schedule_id=made.id))
    for method, request in (
        ("GetSchedule", sc.GetScheduleRequest(schedule_id=made.id)),
        ("RunSchedule", sc.RunScheduleRequest(schedule_id=made.id)),
        ("ListFirings", sc.ListFiringsRequest(schedule_id=made.id)),
        ("DeleteSchedule", sc.DeleteScheduleRequest(schedule_id=made.id)),
    ):
        error = await expect_error(wire.call(method, request), "not_found", "SCHEDULE_NOT_FOUND")
        assert error.metadata["schedule_id"] == made.id


async def test_firings_are_listed_newest_first_a_page_at_a_time(wire: Wire):
    made = await create(wire, cron=DAILY, session_id=(await wire.create_session()).id)
    fired = [
        await wire.call("RunSchedule", sc.RunScheduleRequest(schedule_id=made.id)) for _ in range(3)
    ]
    first = await wire.call("ListFirings", sc.ListFiringsRequest(schedule_id=made.id, page_size=2))
    assert [f.turn_id for f in first.firings] == [fired[2].turn_id, fired[1].turn_id]
    rest = await wire.call(
        "ListFirings",
        sc.ListFiringsRequest(schedule_id=made.id, page_size=2, page_token=first.next_page_token),
    )
    assert [f.turn_id for f in rest.firings] == [fired[0].turn_id]
    assert rest.next_page_token == ""
