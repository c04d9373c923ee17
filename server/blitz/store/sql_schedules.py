"""The store's schedule operations, run alike by both engines (docs/schedules.md).

`SqlSchedules` is part of `SqlStore` (sql_store.py), apart because it is one idea: what the
scheduler (core/schedules) keeps. Its statements are `ScheduleStatements`
(schedule_statements.py), its engine's `_schedule_sql`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar, TypeVar

from blitz.store.rows import Row
from blitz.store.schedule_records import FiringRecord, FiringState, ScheduleRecord
from blitz.store.schedule_statements import SCHEDULE_COLUMNS, ScheduleStatements
from blitz.store.tx import Tx

__all__ = ["SqlSchedules"]

_T = TypeVar("_T")

# A schedule's columns in a row that has its latest firing's after them.
_SCHEDULE_WIDTH = len(SCHEDULE_COLUMNS.split(", "))


def _schedule(row: Row) -> ScheduleRecord:
    sid, owner, spec, state, next_fire, anchor, created, updated = row
    return ScheduleRecord(
        id=sid,
        owner=owner,
        spec=bytes(spec),
        state=int(state),
        next_fire=None if next_fire is None else float(next_fire),
        anchor=float(anchor),
        create_time=float(created),
        update_time=float(updated),
    )


def _schedule_params(rec: ScheduleRecord) -> tuple[object, ...]:
    return (
        rec.id,
        rec.owner,
        rec.spec,
        rec.state,
        rec.next_fire,
        rec.anchor,
        rec.create_time,
        rec.update_time,
    )


def _firing(row: Row) -> FiringRecord:
    schedule_id, tick, fired, via, holder, state, session_id, turn_id, error = row
    return FiringRecord(
        schedule_id=schedule_id,
        tick_time=float(tick),
        fire_time=float(fired),
        via=via,
        holder=holder,
        state=FiringState(state),
        session_id=session_id,
        turn_id=turn_id,
        error=error,
    )


def _firing_params(rec: FiringRecord) -> tuple[object, ...]:
    return (
        rec.schedule_id,
        rec.tick_time,
        rec.fire_time,
        rec.via,
        rec.holder,
        rec.state.value,
        rec.session_id,
        rec.turn_id,
        rec.error,
    )


class SqlSchedules:
    """The schedule half of `SqlStore`; what each operation does, schedule_base.py says."""

    # The engine's schedule statements, and how it runs them (as SqlStore's).
    _schedule_sql: ClassVar[ScheduleStatements]
    _execute: Callable[[str, Sequence[object]], Awaitable[int]]
    _fetch: Callable[[str, Sequence[object]], Awaitable[list[Row]]]

    async def _transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        raise NotImplementedError

    async def add_schedule(self, rec: ScheduleRecord) -> None:
        await self._execute(self._schedule_sql.add_schedule, _schedule_params(rec))

    async def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        found = await self._fetch(self._schedule_sql.get_schedule, (schedule_id,))
        return _schedule(found[0]) if found else None

    async def list_schedules(self, owner: str | None = None) -> list[ScheduleRecord]:
        sql, args = self._schedule_sql.list_schedules(owner)
        return [_schedule(row) for row in await self._fetch(sql, args)]

    async def list_schedules_with_last_firing(
        self, owner: str | None = None
    ) -> list[tuple[ScheduleRecord, FiringRecord | None]]:
        sql, args = self._schedule_sql.list_schedules_with_last_firing(owner)
        found = []
        for row in await self._fetch(sql, args):
            schedule, firing = row[:_SCHEDULE_WIDTH], row[_SCHEDULE_WIDTH:]
            last = None if firing[0] is None else _firing(firing)
            found.append((_schedule(schedule), last))
        return found

    async def update_schedule(self, rec: ScheduleRecord, *, timing: bool = True) -> bool:
        if not timing:
            changed = await self._execute(
                self._schedule_sql.update_schedule_spec, (rec.spec, rec.update_time, rec.id)
            )
            return changed == 1
        changed = await self._execute(
            self._schedule_sql.update_schedule,
            (rec.spec, rec.state, rec.next_fire, rec.anchor, rec.update_time, rec.id),
        )
        return changed == 1

    async def delete_schedule(self, schedule_id: str) -> bool:
        async def body(tx: Tx) -> bool:
            done = [
                await tx.execute(sql, (schedule_id,)) for sql in self._schedule_sql.delete_schedule
            ]
            return done[-1] == 1

        return await self._transaction(body)

    async def due_schedules(self, now: float, *, limit: int) -> list[ScheduleRecord]:
        found = await self._fetch(self._schedule_sql.due_schedules, (now, limit))
        return [_schedule(row) for row in found]

    async def next_due(self) -> float | None:
        found = await self._fetch(self._schedule_sql.next_due, ())
        return None if not found or found[0][0] is None else float(found[0][0])

    async def claim_tick(
        self, schedule_id: str, *, tick: float, next_fire: float, firing: FiringRecord | None
    ) -> bool:
        sql = self._schedule_sql

        async def body(tx: Tx) -> bool:
            if await tx.execute(sql.move_on, (next_fire, schedule_id, tick)) != 1:
                return False
            if firing is not None:
                if await tx.execute(sql.add_firing, _firing_params(firing)) != 1:
                    # The tick has a firing already: it is not this caller's, but the
                    # schedule moves on past it (else its next tick would stay behind).
                    return False
                await tx.execute(sql.prune_firings, (schedule_id, schedule_id))
            return True

        return await self._transaction(body)

    async def add_firing(self, firing: FiringRecord) -> bool:
        sql = self._schedule_sql

        async def body(tx: Tx) -> bool:
            if await tx.execute(sql.add_firing, _firing_params(firing)) != 1:
                return False
            await tx.execute(sql.prune_firings, (firing.schedule_id, firing.schedule_id))
            return True

        return await self._transaction(body)

    async def update_firing(self, firing: FiringRecord, *, holder: str) -> bool:
        changed = await self._execute(
            self._schedule_sql.update_firing,
            (
                firing.holder,
                firing.state.value,
                firing.session_id,
                firing.turn_id,
                firing.error,
                firing.schedule_id,
                firing.tick_time,
                holder,
            ),
        )
        return changed == 1

    async def list_firings(
        self, schedule_id: str, *, limit: int, before: float | None = None
    ) -> list[FiringRecord]:
        sql, args = self._schedule_sql.list_firings(schedule_id, limit=limit, before=before)
        return [_firing(row) for row in await self._fetch(sql, args)]

    async def take_over_firings(
        self, holder: str, *, now: float, before: float
    ) -> list[FiringRecord]:
        found = await self._fetch(self._schedule_sql.take_over_firings, (holder, now, before))
        return [_firing(row) for row in found]
