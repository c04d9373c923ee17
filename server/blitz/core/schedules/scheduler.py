"""The scheduler: on every process, a task that fires each schedule's ticks as they come.

It sleeps until the earliest next tick of any active schedule (at most `_POLL`, so that a
schedule another process made is seen; a schedule made or changed here wakes it at once),
then, for each schedule that is due, claims its tick (`Store.claim_tick`): the schedule's
next tick moves on and the firing is recorded in one transaction, only if the next tick is
still the one read, so of all the processes sharing the store exactly one fires it. The
firing (`firing.py`) then runs as a task of its own, a few at once. A firing asked for now
(RunSchedule's) runs as a task of the scheduler's too, which its caller only waits on: a
caller cancelled or gone never leaves it half done. Each schedule's spec is read and
checked once, when the scheduler first meets it or it changed (`loaded.py`), not at every
tick.

A tick is on time if it came while this process's scheduler ran: it fires, however late
the loop got to it (up to `_LATE`). A tick that came before the scheduler started (no
server ran then, or none of the replicas did), or longer than `_LATE` ago (a machine that
slept), was missed: all such ticks of a schedule become one firing (via "catch_up") or
none, as its `catch_up` says.

A firing whose holder died half way (claimed, turn not started) is taken over: on a store
of one process, at start; on a shared one, by whichever process sees it silent for a
lease. It must never fire a tick twice, and never hold a coroutine per schedule: a
schedule is a row, and its next tick a column.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from blitz.core.schedules.firing import Firings
from blitz.core.schedules.loaded import Loaded, LoadedSchedules
from blitz.core.schedules.timing import Timing
from blitz.core.supervisor import Supervisor, raise_if_cancelled
from blitz.store import FiringRecord, ScheduleRecord, Store
from blitz.v1 import schedules_pb2 as sc

__all__ = ["Scheduler"]

log = structlog.get_logger(__name__)

# The longest sleep: how soon a schedule made by another process is seen.
_POLL = 2.0
# A tick later than this when the loop gets to it was missed (the machine slept).
_LATE = 60.0
# Due schedules looked at per round, and firings carried out at once.
_BATCH = 32
_AT_ONCE = 8


class Scheduler:
    """`async with Scheduler(...)`: fires ticks while open."""

    def __init__(self, *, store: Store, firings: Firings, lease: float) -> None:
        """`lease`: how long a firing's holder may be silent before another process
        takes it over (the turn lease)."""
        self._store = store
        self._firings = firings
        self._lease = lease
        self._wake = asyncio.Event()
        self._tasks = Supervisor("schedules")
        self._slots = asyncio.Semaphore(_AT_ONCE)
        self._loaded = LoadedSchedules()
        self._started = time.time()

    async def __aenter__(self) -> Scheduler:
        self._started = time.time()
        self._tasks.spawn(self._run(), name="schedules")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._tasks.aclose()

    def wake(self) -> None:
        """A schedule was made or changed here: look again now."""
        self._wake.set()

    async def fire_now(self, rec: ScheduleRecord) -> FiringRecord:
        """Record a firing of `rec` now (RunSchedule's) and carry it out; the firing as
        recorded. Both are a task of the scheduler's own that the caller only waits on
        (as a turn's ending is, core/driver/endings.py): a caller cancelled or gone leaves
        it to finish. When the scheduler closes it is cancelled like any firing, and what
        it left half done is taken over."""
        timing = self._loaded.of(rec).timing
        task = self._tasks.spawn(self._run_now(rec, timing), name=f"schedule-run-{rec.id}")
        return await asyncio.shield(task)

    async def _run_now(self, rec: ScheduleRecord, timing: Timing) -> FiringRecord:
        now = time.time()
        firing = self._firing(rec.id, now, "run_now", now)
        while not await self._store.add_firing(firing):
            firing.tick_time += 1e-6  # another at the same microsecond: the next one
        return await self._firings.fire(rec, firing, timing)

    async def _run(self) -> None:
        # A firing its holder left is another's once its holder is surely gone: on a store
        # of one process, any from before this start.
        stale_before = self._started if not self._store.shared else None
        while True:
            raise_if_cancelled()
            try:
                await self._take_over(stale_before)
                stale_before = None
                if await self._round():
                    continue  # there may be more due: look again at once
                wait = _POLL
                if (due := await self._store.next_due()) is not None:
                    wait = min(wait, max(0.0, due - time.time()))
            except Exception:
                raise_if_cancelled()
                log.exception("schedules_failed")
                wait = _POLL
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            self._wake.clear()

    async def _take_over(self, before: float | None) -> None:
        now = time.time()
        if before is None:
            if not self._store.shared:
                return
            before = now - self._lease
        for firing in await self._store.take_over_firings(
            self._firings.holder, now=now, before=before
        ):
            rec = await self._store.get_schedule(firing.schedule_id)
            if rec is not None:
                log.info("schedule_firing_taken_over", schedule_id=rec.id, tick=firing.tick_time)
                await self._spawn(rec, firing)

    async def _round(self) -> bool:
        """Claim a step of every due schedule; whether any was claimed."""
        now = time.time()
        claimed = False
        for rec in await self._store.due_schedules(now, limit=_BATCH):
            assert rec.next_fire is not None  # due ones are active, so they have one
            try:
                firing, next_fire = self._step(rec, self._loaded.of(rec), now)
            except Exception:  # checked when stored: a broken spec is paused, not retried
                log.exception("schedule_unreadable", schedule_id=rec.id)
                rec.state, rec.next_fire = sc.SCHEDULE_STATE_PAUSED, None
                await self._store.update_schedule(rec)
                continue
            if await self._store.claim_tick(
                rec.id, tick=rec.next_fire, next_fire=next_fire, firing=firing
            ):
                claimed = True
                if firing is not None:
                    await self._spawn(rec, firing)
                else:
                    log.info("schedule_skipped", schedule_id=rec.id, until=next_fire)
        return claimed

    def _step(
        self, rec: ScheduleRecord, loaded: Loaded, now: float
    ) -> tuple[FiringRecord | None, float]:
        """What the schedule's due tick becomes: a firing (or none), and the next tick."""
        assert rec.next_fire is not None
        timing = loaded.timing
        tick = rec.next_fire
        missed_before = max(self._started, now - _LATE)
        if tick >= missed_before:
            return self._firing(rec.id, tick, "tick", now), timing.next_after(tick)
        # Every tick before `missed_before` was missed: one firing for them all, or none.
        last = max(timing.last_before(missed_before) or tick, tick)
        firing = None
        if loaded.spec.catch_up == sc.CATCH_UP_ONCE:
            firing = self._firing(rec.id, last, "catch_up", now)
        return firing, timing.next_after(last)

    def _firing(self, schedule_id: str, tick: float, via: str, now: float) -> FiringRecord:
        return FiringRecord(
            schedule_id=schedule_id,
            tick_time=tick,
            fire_time=now,
            via=via,
            holder=self._firings.holder,
        )

    async def _spawn(self, rec: ScheduleRecord, firing: FiringRecord) -> None:
        await self._slots.acquire()
        self._tasks.spawn(self._fire(rec, firing), name=f"schedule-{rec.id}")

    async def _fire(self, rec: ScheduleRecord, firing: FiringRecord) -> None:
        try:
            await self._firings.fire(rec, firing, self._loaded.of(rec).timing)
        finally:
            self._slots.release()
