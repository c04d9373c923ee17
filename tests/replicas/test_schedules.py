"""Schedules on two replicas of one PostgreSQL: over a minute, through a kill -9 of one and
its restart, every tick of a schedule fires exactly once, in a session of its own.

Both replicas wake for each tick; the store lets one claim it (`Store.claim_tick`), and a
firing the dead replica left half done is finished by the other once its lease ends. The
schedule ticks every 2 s; the test reads back every firing and every session it made.
"""

from __future__ import annotations

import asyncio
import itertools
import time

from google.protobuf.field_mask_pb2 import FieldMask
from support.schedules import at, create, every, firings, turn_of

from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s

EVERY = 2.0
RUN = 60.0


async def test_two_replicas_fire_each_tick_exactly_once_through_a_kill(replicas, wires):
    a, b = replicas("a", "b")
    on_a, on_b = wires(a, "grpc"), wires(b, "connect")
    made = await create(
        on_a, every=every(EVERY), prompt="tick", catch_up=sc.CATCH_UP_ONCE, title="beat"
    )
    start = time.monotonic()
    await asyncio.sleep(RUN / 3)
    a.kill()
    await asyncio.sleep(RUN / 4)
    replicas("a")
    await asyncio.sleep(max(0.0, RUN - (time.monotonic() - start)))
    await on_b.call(
        "UpdateSchedule",
        sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=made.id, state=sc.SCHEDULE_STATE_PAUSED),
            update_mask=FieldMask(paths=["state"]),
        ),
    )
    # A firing the dead replica left half done is finished once its lease has passed.
    deadline = time.monotonic() + 30
    while True:
        found = await firings(on_b, made.id)
        if all(f.turn_id or f.error for f in found) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)

    ticks = [at(f.tick_time) for f in found]
    assert len(found) >= RUN / EVERY - 4, [f.via for f in found]
    gaps = {round(later - earlier, 3) for earlier, later in itertools.pairwise(ticks)}
    assert gaps == {EVERY}, "every tick from the first to the last fired, none twice"
    assert {f.via for f in found} <= {"tick", "catch_up"}
    assert all(f.error == "" and f.turn_id for f in found), [f.error for f in found]
    assert len({f.turn_id for f in found}) == len(found)
    listed = await on_b.call(
        "ListSessions", s.ListSessionsRequest(labels={"schedule_id": made.id}, page_size=500)
    )
    assert sorted(x.id for x in listed.sessions) == sorted(f.session_id for f in found), (
        "one session per firing, none made twice"
    )
    for firing in found[-3:]:
        assert (await turn_of(on_b, firing)).turn.text == "tick"
    fired_by_b = [x for x in b.lines() if x.get("event") == "schedule_fired"]
    assert fired_by_b, "the survivor went on firing"
