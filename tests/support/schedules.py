"""What the schedule tests share: making a schedule through a client, and reading back its
firings and the turns they started."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s
from support.wire import Wire

__all__ = ["at", "create", "every", "finished", "fired", "firings", "turn_of"]


def every(seconds: float) -> Duration:
    whole = int(seconds)
    return Duration(seconds=whole, nanos=round((seconds - whole) * 1e9))


async def create(wire: Wire, **fields: Any) -> sc.Schedule:
    """CreateSchedule of a Schedule with these fields (a prompt of "hello" unless told)."""
    if "prompt" not in fields and "workflow" not in fields:
        fields["prompt"] = "hello"
    request = sc.CreateScheduleRequest(schedule=sc.Schedule(**fields))
    made: sc.Schedule = await wire.call("CreateSchedule", request)
    return made


async def firings(wire: Wire, schedule_id: str) -> list[sc.ScheduleFiring]:
    """Every firing of the schedule, the oldest tick first."""
    found: list[sc.ScheduleFiring] = []
    token = ""
    while True:
        page = await wire.call(
            "ListFirings", sc.ListFiringsRequest(schedule_id=schedule_id, page_token=token)
        )
        found.extend(page.firings)
        token = page.next_page_token
        if not token:
            return found[::-1]


async def turn_of(wire: Wire, firing: sc.ScheduleFiring) -> s.TurnSummary:
    """The turn a firing started."""
    request = s.GetTurnRequest(session_id=firing.session_id, turn_id=firing.turn_id)
    summary: s.TurnSummary = await wire.call("GetTurn", request)
    return summary


def at(stamp: Timestamp) -> float:
    """A timestamp as the epoch's seconds."""
    return stamp.seconds + stamp.nanos / 1e9


async def fired(
    wire: Wire,
    schedule_id: str,
    count: int = 1,
    *,
    within: float = 30.0,
    done: Callable[[list[sc.ScheduleFiring]], bool] | None = None,
) -> list[sc.ScheduleFiring]:
    """The schedule's firings once it has `count` (and `done` says so), or all it has after
    `within` seconds: the caller's assertion says what was missing."""
    deadline = time.monotonic() + within
    while True:
        found = await firings(wire, schedule_id)
        if (len(found) >= count and (done is None or done(found))) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def finished(wire: Wire, firing: sc.ScheduleFiring, *, within: float = 30.0) -> s.TurnSummary:
    """The firing's turn once it has finished (or as it is after `within` seconds)."""
    deadline = time.monotonic() + within
    while True:
        turn = await turn_of(wire, firing)
        if turn.state == s.TURN_STATE_FINISHED or time.monotonic() > deadline:
            return turn
        await asyncio.sleep(0.1)
