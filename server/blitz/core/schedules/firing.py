"""One firing carried out: the session found or made, the turn started, as the owner.

A firing's turn is started exactly as RunTurn and RunWorkflow start theirs (the calls
handed in are `SessionCore.start_turn` and `WorkflowCore.start_workflow`), with the
context of the schedule's owner: the owner's sessions, rules and modes, and nothing an
admin could reach unless the owner is one. So a scheduled turn parks on its approvals
and webhooks announce them as they do any turn's.

A firing is recorded before it starts anything (`Store.claim_tick`), and each step it
takes is made so that doing it again does no more: the session it makes is written on
the firing before the turn starts, and the turn's id is the firing's own
(`turn_id_of`), which RunTurn answers with the turn already started. So a firing its
holder left half done (the process died) is finished by whoever takes it over, once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from blitz.core.schedules.timing import Timing
from blitz.errors import BlitzError
from blitz.ports import CallContext
from blitz.store import FiringRecord, FiringState, ScheduleRecord, Store
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f

__all__ = [
    "SCHEDULE_LABEL",
    "CreateSession",
    "Firings",
    "IsAdmin",
    "StartTurn",
    "StartWorkflow",
    "session_title",
    "turn_id_of",
]

log = structlog.get_logger(__name__)

CreateSession = Callable[[s.CreateSessionRequest, CallContext], Awaitable[s.Session]]
StartTurn = Callable[[s.RunTurnRequest, CallContext], Awaitable[str]]
StartWorkflow = Callable[[f.RunWorkflowRequest, CallContext], Awaitable[str]]
IsAdmin = Callable[[str], Awaitable[bool]]

# The label every session a schedule makes carries: the schedule's id.
SCHEDULE_LABEL = "schedule_id"
_DEFAULT_TITLE = "{schedule} {datetime}"
_TITLE_MAX = 500


def turn_id_of(firing: FiringRecord) -> str:
    """The firing's turn id: the same whoever carries it out."""
    return f"t_{firing.schedule_id}_{round(firing.tick_time * 1e6)}"


def session_title(template: str, *, schedule: str, timing: Timing, tick: float) -> str:
    """A session's title from the template: its placeholders replaced, nothing evaluated,
    cut to a title's length."""
    at = timing.local(tick)
    title = (template or _DEFAULT_TITLE)[:_TITLE_MAX]
    for name, value in (
        ("{date}", at.strftime("%Y-%m-%d")),
        ("{time}", at.strftime("%H:%M")),
        ("{datetime}", at.strftime("%Y-%m-%d %H:%M")),
        ("{schedule}", schedule or "schedule"),
    ):
        title = title.replace(name, value)
        if len(title) > _TITLE_MAX:
            title = title[:_TITLE_MAX]
    return title.strip() or "schedule"


@dataclass(frozen=True)
class Firings:
    """What a firing is carried out with."""

    store: Store
    create_session: CreateSession
    start_turn: StartTurn
    start_workflow: StartWorkflow
    is_admin: IsAdmin
    # This process, as the holder of the firings it carries out.
    holder: str

    async def fire(self, rec: ScheduleRecord, firing: FiringRecord, timing: Timing) -> FiringRecord:
        """Carry out `firing` (which this process holds) and record how it went; the
        firing as recorded. A BlitzError of the calls is the firing's `error`."""
        spec = sc.Schedule.FromString(rec.spec)
        bound = log.bind(schedule_id=rec.id, tick=firing.tick_time, via=firing.via)
        ctx = CallContext(caller=rec.owner, admin=await self.is_admin(rec.owner))
        try:
            session_id = spec.session_id or firing.session_id
            if not session_id:
                session = await self.create_session(
                    _session_request(spec, rec, timing, firing), ctx
                )
                session_id = firing.session_id = session.id
                if not await self.store.update_firing(firing, holder=self.holder):
                    bound.warning("schedule_firing_taken_over", session_id=session_id)
                    return firing
            firing.session_id = session_id
            firing.turn_id = await self._start(spec, session_id, turn_id_of(firing), ctx)
            firing.state = FiringState.FIRED
        except BlitzError as exc:
            firing.error = f"{exc.reason.value[0]}: {exc.message}"
            firing.state = FiringState.FAILED
        except Exception:
            # Not ours: said in the log with its traceback, never in the firing.
            bound.exception("schedule_firing_failed")
            firing.error = "INTERNAL: the firing failed; the server's log says why"
            firing.state = FiringState.FAILED
        firing.holder = ""
        if not await self.store.update_firing(firing, holder=self.holder):
            bound.warning("schedule_firing_taken_over", session_id=firing.session_id)
            return firing
        if firing.error:
            bound.warning("schedule_fired", session_id=firing.session_id, error=firing.error)
        else:
            bound.info("schedule_fired", session_id=firing.session_id, turn_id=firing.turn_id)
        return firing

    async def _start(
        self, spec: sc.Schedule, session_id: str, turn_id: str, ctx: CallContext
    ) -> str:
        busy = spec.busy or s.BUSY_STRATEGY_ENQUEUE
        if spec.WhichOneof("what") == "workflow":
            run = f.RunWorkflowRequest(
                session_id=session_id,
                name=spec.workflow.name,
                params=dict(spec.workflow.params),
                turn_id=turn_id,
                busy=busy,
            )
            return await self.start_workflow(run, ctx)
        turn = s.RunTurnRequest(
            session_id=session_id, turn=t.Turn(text=spec.prompt), turn_id=turn_id, busy=busy
        )
        return await self.start_turn(turn, ctx)


def _session_request(
    spec: sc.Schedule, rec: ScheduleRecord, timing: Timing, firing: FiringRecord
) -> s.CreateSessionRequest:
    template = spec.session
    labels = dict(template.labels)
    labels[SCHEDULE_LABEL] = rec.id
    return s.CreateSessionRequest(
        title=session_title(
            template.title, schedule=spec.title, timing=timing, tick=firing.tick_time
        ),
        workspace=template.workspace,
        model=template.model,
        labels=labels,
        mode=template.mode,
        agent=template.agent,
    )
