"""ScheduleService's calls of the asyncio client: `AsyncBlitz` is made of them and its other
calls (`_calls.py`), apart because schedules are one idea of their own (docs/schedules.md)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from datetime import timedelta
from typing import Literal

from blitz.v1 import schedules_pb2, turn_pb2
from blitz_client._calls import Calls
from blitz_client._requests import busy_value, duration

__all__ = ["ScheduleCalls", "schedule_message"]

_CATCH_UP = {"skip": schedules_pb2.CATCH_UP_SKIP, "once": schedules_pb2.CATCH_UP_ONCE}
_MODES = {
    "ask": turn_pb2.SESSION_MODE_ASK,
    "accept_edits": turn_pb2.SESSION_MODE_ACCEPT_EDITS,
    "read_only": turn_pb2.SESSION_MODE_READ_ONLY,
    "plan": turn_pb2.SESSION_MODE_PLAN,
    "bypass": turn_pb2.SESSION_MODE_BYPASS,
}


def _word(table: Mapping[str, int], name: str, what: str) -> int:
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"{what} must be one of {', '.join(table)}") from None


def schedule_message(
    *,
    cron: str | None = None,
    every: float | timedelta | None = None,
    time_zone: str = "",
    prompt: str | None = None,
    workflow: str | None = None,
    params: Mapping[str, object] | None = None,
    title: str = "",
    session_id: str = "",
    session_title: str = "",
    labels: Mapping[str, str] | None = None,
    model: str = "",
    agent: str = "",
    workspace: str = "",
    mode: str = "",
    busy: str | int = "enqueue",
    catch_up: Literal["skip", "once"] = "skip",
) -> schedules_pb2.Schedule:
    """A `Schedule` of these fields, as `AsyncBlitz.create_schedule` takes them."""
    if (cron is None) == (every is None):
        raise ValueError("give cron or every, one of them")
    if (prompt is None) == (workflow is None):
        raise ValueError("give prompt or workflow, one of them")
    spec = schedules_pb2.Schedule(title=title, time_zone=time_zone, session_id=session_id)
    if cron is not None:
        spec.cron = cron
    else:
        assert every is not None
        spec.every.CopyFrom(duration(every))
    if prompt is not None:
        spec.prompt = prompt
    else:
        spec.workflow.name = workflow or ""
        for key, value in (params or {}).items():
            spec.workflow.params[key] = (
                str(value).lower() if isinstance(value, bool) else str(value)
            )
    if not session_id:
        template = spec.session
        template.title, template.model, template.agent = session_title, model, agent
        template.workspace = workspace
        template.labels.update(labels or {})
        if mode:
            template.mode = _word(_MODES, mode, "mode")  # type: ignore[assignment]
    elif session_title or labels or model or agent or workspace or mode:
        raise ValueError("a schedule with a session_id makes no sessions: leave their fields")
    spec.busy = busy_value(busy)  # type: ignore[assignment]
    spec.catch_up = _word(_CATCH_UP, catch_up, "catch_up")  # type: ignore[assignment]
    return spec


class ScheduleCalls(Calls):
    """The schedule calls of `AsyncBlitz`."""

    async def create_schedule(
        self, schedule: schedules_pb2.Schedule | None = None, **fields: object
    ) -> schedules_pb2.Schedule:
        """A schedule that starts a turn (`prompt`) or a workflow run (`workflow`, with
        `params`) at each tick of `cron` (read in `time_zone`) or `every` seconds: in a new
        session each time (`session_title` with `{date}`, `{time}`, `{datetime}`,
        `{schedule}`; `labels`, `model`, `agent`, `workspace`, `mode`), or in `session_id`
        (queued behind its turn, or as `busy` says). `catch_up`: "once" fires once for
        ticks missed while no server ran, "skip" (the default) skips them. Or a whole
        `Schedule` message."""
        spec = schedule or schedule_message(**fields)  # type: ignore[arg-type]
        request = schedules_pb2.CreateScheduleRequest(schedule=spec)
        result: schedules_pb2.Schedule = await self._unary("CreateSchedule", request)
        return result

    async def schedules(self) -> list[schedules_pb2.Schedule]:
        """Your schedules, oldest first (an admin's: every schedule)."""
        response: schedules_pb2.ListSchedulesResponse = await self._unary(
            "ListSchedules", schedules_pb2.ListSchedulesRequest()
        )
        return list(response.schedules)

    async def schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """One schedule, with its next tick and its latest firing."""
        request = schedules_pb2.GetScheduleRequest(schedule_id=schedule_id)
        result: schedules_pb2.Schedule = await self._unary("GetSchedule", request)
        return result

    async def update_schedule(
        self, schedule_id: str, *, paused: bool | None = None, **fields: object
    ) -> schedules_pb2.Schedule:
        """Change what is given (`paused`, or any of `create_schedule`'s fields, by the
        proto's names: `cron`, `every`, `time_zone`, `prompt`, `title`, `session_id`,
        `busy`, `catch_up`), leave the rest. The schedule as it now is."""
        request = schedules_pb2.UpdateScheduleRequest()
        spec, paths = request.schedule, request.update_mask.paths
        spec.id = schedule_id
        if paused is not None:
            spec.state = (  # type: ignore[assignment]
                schedules_pb2.SCHEDULE_STATE_PAUSED
                if paused
                else schedules_pb2.SCHEDULE_STATE_ACTIVE
            )
            paths.append("state")
        for name, value in fields.items():
            if name == "every":
                spec.every.CopyFrom(duration(value))  # type: ignore[arg-type]
            elif name == "busy":
                spec.busy = busy_value(value)  # type: ignore[arg-type, assignment]
            elif name == "catch_up":
                spec.catch_up = _word(_CATCH_UP, str(value), "catch_up")  # type: ignore[assignment]
            else:
                setattr(spec, name, value)
            paths.append(name)
        result: schedules_pb2.Schedule = await self._unary("UpdateSchedule", request)
        return result

    async def pause_schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """Stop firing; ticks that pass while paused are never caught up."""
        return await self.update_schedule(schedule_id, paused=True)

    async def resume_schedule(self, schedule_id: str) -> schedules_pb2.Schedule:
        """Fire again, from the next tick to come."""
        return await self.update_schedule(schedule_id, paused=False)

    async def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule and its firings (the sessions and turns it started stay)."""
        request = schedules_pb2.DeleteScheduleRequest(schedule_id=schedule_id)
        await self._unary("DeleteSchedule", request)

    async def run_schedule(self, schedule_id: str) -> schedules_pb2.ScheduleFiring:
        """Fire it now, once, paused or not: the firing, with its session and turn (or its
        `error`)."""
        request = schedules_pb2.RunScheduleRequest(schedule_id=schedule_id)
        result: schedules_pb2.ScheduleFiring = await self._unary("RunSchedule", request)
        return result

    async def firings(
        self, schedule_id: str, *, page_size: int = 0
    ) -> AsyncGenerator[schedules_pb2.ScheduleFiring, None]:
        """The schedule's firings, the latest first, fetched a page at a time."""
        token = ""
        while True:
            request = schedules_pb2.ListFiringsRequest(
                schedule_id=schedule_id, page_size=page_size, page_token=token
            )
            page: schedules_pb2.ListFiringsResponse = await self._unary("ListFirings", request)
            for firing in page.firings:
                yield firing
            token = page.next_page_token
            if not token:
                return
