"""The schedules' part of the storage interface: schedules and their firings.

`Store` (base.py) is made of it; apart because it is one idea, what the scheduler
(core/schedules) keeps. `SqlSchedules` (sql_schedules.py) implements it for both engines.
Two operations decide races between processes sharing the store: `claim_tick` (a tick is
fired by one process) and `take_over_firings` (a firing its holder left is finished by
one process).
"""

from __future__ import annotations

from typing import Protocol

from blitz.store.schedule_records import FiringRecord, ScheduleRecord

__all__ = ["ScheduleStore"]


class ScheduleStore(Protocol):
    """The schedule operations of a store."""

    async def add_schedule(self, rec: ScheduleRecord) -> None: ...

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None: ...

    async def list_schedules(self, owner: str | None = None) -> list[ScheduleRecord]:
        """The schedules of `owner` (None: every one), oldest first."""
        ...

    async def list_schedules_with_last_firing(
        self, owner: str | None = None
    ) -> list[tuple[ScheduleRecord, FiringRecord | None]]:
        """The schedules of `owner` (None: every one), oldest first, each with its firing
        of the latest tick (None: it has none), read in one query."""
        ...

    async def update_schedule(self, rec: ScheduleRecord, *, timing: bool = True) -> bool:
        """Write what may change of the schedule (its spec, state, next tick, anchor and
        update time); whether there was one. Without `timing`, its spec and update time
        only: a next tick read before a claim moved it on is not written back."""
        ...

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete the schedule and its firings, in one transaction; whether there was one."""
        ...

    async def due_schedules(self, now: float, *, limit: int) -> list[ScheduleRecord]:
        """Up to `limit` active schedules whose next tick is at `now` or before, the
        earliest first."""
        ...

    async def next_due(self) -> float | None:
        """The earliest next tick of any active schedule (None: none is active)."""
        ...

    async def claim_tick(
        self, schedule_id: str, *, tick: float, next_fire: float, firing: FiringRecord | None
    ) -> bool:
        """Move the schedule's next tick on from `tick` to `next_fire` and record `firing`
        (None: the tick is skipped), in one transaction, if its next tick is still `tick`
        and it is active: whether this call did (of several processes claiming one tick,
        exactly one does). A tick that has a firing already is not claimed, but the next
        tick still moves on past it. The schedule's older firings past the latest
        `FIRINGS_KEPT` go."""
        ...

    async def add_firing(self, firing: FiringRecord) -> bool:
        """Record a firing not of a tick (RunSchedule's); False if the schedule has one at
        that time already."""
        ...

    async def update_firing(self, firing: FiringRecord, *, holder: str) -> bool:
        """Write the firing's holder, state, session, turn and error, if `holder` still
        holds it; whether it did."""
        ...

    async def list_firings(
        self, schedule_id: str, *, limit: int, before: float | None = None
    ) -> list[FiringRecord]:
        """The schedule's firings, the latest tick first, those before `before`."""
        ...

    async def take_over_firings(
        self, holder: str, *, now: float, before: float
    ) -> list[FiringRecord]:
        """Take every firing still firing that its holder took up before `before`: each
        becomes `holder`'s, taken up at `now`. Of several processes, one takes each."""
        ...
