"""ScheduleService, transport-free: the schedule port (`blitz.ports.SchedulePort`).

`ScheduleCore` serves the calls and owns the scheduler that fires the ticks
(`scheduler.py`). Each call checks its request (`checks.py`), finds the caller's schedule
and answers with the views of `views.py`.

Whose is what: a schedule belongs to the principal that made it, and its firings run as
that principal. A principal sees and changes its own schedules; another is told
SCHEDULE_NOT_FOUND, as it is told SESSION_NOT_FOUND of another's session, so no id reveals
anything. An admin sees and acts on every schedule; its firings still run as their owner.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import structlog

from blitz.core.api import validation as check
from blitz.core.schedules import checks
from blitz.core.schedules.firing import Firings
from blitz.core.schedules.scheduler import Scheduler
from blitz.core.schedules.views import firing_view, schedule_view
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import CallContext
from blitz.store import ScheduleRecord, Store
from blitz.v1 import schedules_pb2 as sc

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession

__all__ = ["ScheduleCore"]

log = structlog.get_logger(__name__)

_PAGE_MAX = 200


class ScheduleCore:
    """Every ScheduleService call. `async with` runs the scheduler until it is left."""

    def __init__(
        self, *, store: Store, find_session: FindSession, firings: Firings, lease: float
    ) -> None:
        """`find_session`: the caller's session (`SessionCore.session_record`), for a
        schedule of one session; `firings`: what carries a firing out (the session and
        workflow calls it starts turns with); `lease`: how long a firing's holder may be
        silent before another process finishes it (the turn lease)."""
        self._store = store
        self._find_session = find_session
        self._firings = firings
        self._scheduler = Scheduler(store=store, firings=firings, lease=lease)

    async def __aenter__(self) -> ScheduleCore:
        await self._scheduler.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._scheduler.__aexit__(*exc)

    async def _schedule(self, schedule_id: str, ctx: CallContext) -> ScheduleRecord:
        """The caller's schedule, or SCHEDULE_NOT_FOUND (another's is not revealed)."""
        check.require(schedule_id, "schedule_id")
        rec = await self._store.get_schedule(schedule_id)
        if rec is None or (rec.owner != ctx.caller and not ctx.admin):
            raise _not_found(schedule_id)
        return rec

    async def _view(self, rec: ScheduleRecord) -> sc.Schedule:
        last = await self._store.list_firings(rec.id, limit=1)
        return schedule_view(rec, last[0] if last else None)

    async def create_schedule(self, req: sc.CreateScheduleRequest, ctx: CallContext) -> sc.Schedule:
        now = time.time()
        spec = checks.check_schedule(req.schedule, now=now)
        if spec.session_id:
            await self._find_session(spec.session_id, ctx)
        if len(await self._store.list_schedules(ctx.caller)) >= checks.SCHEDULES_MAX:
            raise invalid_argument(
                "schedule",
                f"a principal has at most {checks.SCHEDULES_MAX} schedules: delete one first",
                limit=str(checks.SCHEDULES_MAX),
            )
        rec = ScheduleRecord(
            id="sc_" + uuid.uuid4().hex[:24],
            owner=ctx.caller,
            spec=spec.SerializeToString(),
            state=sc.SCHEDULE_STATE_ACTIVE,
            next_fire=checks.timing_of(spec, anchor=now).next_after(now),
            anchor=now,
            create_time=now,
            update_time=now,
        )
        await self._store.add_schedule(rec)
        self._scheduler.wake()
        log.info("schedule_created", schedule_id=rec.id, when=spec.WhichOneof("when"))
        return schedule_view(rec, None)

    async def get_schedule(self, req: sc.GetScheduleRequest, ctx: CallContext) -> sc.Schedule:
        return await self._view(await self._schedule(req.schedule_id, ctx))

    async def list_schedules(
        self, req: sc.ListSchedulesRequest, ctx: CallContext
    ) -> sc.ListSchedulesResponse:
        found = await self._store.list_schedules_with_last_firing(None if ctx.admin else ctx.caller)
        return sc.ListSchedulesResponse(schedules=[schedule_view(rec, last) for rec, last in found])

    async def update_schedule(self, req: sc.UpdateScheduleRequest, ctx: CallContext) -> sc.Schedule:
        rec = await self._schedule(req.schedule.id, ctx)
        paths = checks.check_mask(req.update_mask.paths)
        spec = sc.Schedule.FromString(rec.spec)
        asked = req.schedule
        for path in paths:
            if path == "state":
                continue
            if path in ("cron", "every") and not _given(asked, "when", path, paths):
                continue  # both named: the one set is meant
            if path == "cron":
                spec.cron = asked.cron
            elif path == "every":
                spec.every.CopyFrom(asked.every)
            elif path == "prompt":
                if _given(asked, "what", path, paths):
                    spec.prompt = asked.prompt
            elif path in ("workflow", "session"):
                if asked.HasField(path):
                    getattr(spec, path).CopyFrom(getattr(asked, path))
                else:
                    spec.ClearField(path)
            else:
                setattr(spec, path, getattr(asked, path))
        now = time.time()
        spec = checks.check_schedule(spec, now=now)
        if "session_id" in paths and spec.session_id:
            await self._find_session(spec.session_id, ctx)
        state = rec.state
        if "state" in paths:
            state = checks.check_state(asked.state)
        retimed = bool({"cron", "every", "time_zone"} & set(paths))
        resumed = state == sc.SCHEDULE_STATE_ACTIVE and rec.state != state
        rec.spec, rec.update_time = spec.SerializeToString(), now
        timing = state != rec.state or retimed or rec.next_fire is None
        if state == sc.SCHEDULE_STATE_PAUSED:
            rec.state, rec.next_fire = state, None
        elif retimed or resumed or rec.next_fire is None:
            # Ticks are counted from now: none that passed before is caught up.
            rec.state, rec.anchor = state, now
            rec.next_fire = checks.timing_of(spec, anchor=now).next_after(now)
        # An edit of anything else writes no next tick: the one read may be stale.
        if not await self._store.update_schedule(rec, timing=timing):
            raise _not_found(rec.id)
        self._scheduler.wake()
        log.info("schedule_updated", schedule_id=rec.id, fields=paths)
        return await self._view(rec)

    async def delete_schedule(
        self, req: sc.DeleteScheduleRequest, ctx: CallContext
    ) -> sc.DeleteScheduleResponse:
        rec = await self._schedule(req.schedule_id, ctx)
        await self._store.delete_schedule(rec.id)
        log.info("schedule_deleted", schedule_id=rec.id)
        return sc.DeleteScheduleResponse()

    async def run_schedule(self, req: sc.RunScheduleRequest, ctx: CallContext) -> sc.ScheduleFiring:
        rec = await self._schedule(req.schedule_id, ctx)
        log.info("schedule_run_now", schedule_id=rec.id, by=ctx.caller)
        # The scheduler records and carries out the firing in a task of its own: a caller
        # that goes away leaves it to finish, never half done.
        return firing_view(await self._scheduler.fire_now(rec))

    async def list_firings(
        self, req: sc.ListFiringsRequest, ctx: CallContext
    ) -> sc.ListFiringsResponse:
        rec = await self._schedule(req.schedule_id, ctx)
        size, after = check.page_of(req.page_size, req.page_token)
        size = min(size, _PAGE_MAX)
        found = await self._store.list_firings(
            rec.id, limit=size + 1, before=after[0] if after else None
        )
        page = sc.ListFiringsResponse(firings=[firing_view(f) for f in found[:size]])
        if len(found) > size:
            page.next_page_token = check.token_after(found[size - 1].tick_time, rec.id)
        return page


def _given(asked: sc.Schedule, oneof: str, path: str, paths: list[str]) -> bool:
    """Whether a field of a oneof the mask names is meant: it is the one set, or no other
    field of the oneof is named."""
    other = {"cron": "every", "every": "cron", "prompt": "workflow"}.get(path, "")
    return asked.WhichOneof(oneof) == path or other not in paths


def _not_found(schedule_id: str) -> BlitzError:
    return BlitzError(
        Reason.SCHEDULE_NOT_FOUND, f"no schedule {schedule_id!r}", {"schedule_id": schedule_id}
    )
