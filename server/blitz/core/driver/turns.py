"""The turn driver: starts turns, drives the agent, parks them and resumes them.

A turn is a durable log of events plus a small resumable state (its `TurnRecord`). While
it runs, one supervised task of this process drives the agent through the agent port.
When the agent stops on requests that need a person, the turn parks (`pending.py` stores
and announces them) and the task ends: no coroutine waits for the answer. Once every
request is resolved, the driver hears of it (`answered`, with everything it needs) and
resumes the turn from what is stored, in whichever process received the last answer,
after a restart included: parking and waking are `parking.py`'s, which `Turns` inherits.

Every turn ends with exactly one `finished` event, whatever happened: an answer, an
error, a cancel, a deadline, a shutdown; how is the other half of the driver,
`endings.py`, which `Turns` inherits, as it does the queue of turns waiting for their
session (`queue.py`). What a dead process left behind is settled by `recovery.py`.

Where processes share the store, a turn is held by the one running it: that one writes
it, fenced by the epoch it took it at, and renews its lease (`leases.py`, through
`renewed`). A parked turn is held by no one: whichever process hears the last answer
takes it (`claim_turn`, which one wins) and resumes it; so does one ending it at its
deadline or cancelling it. A cancel of a turn running elsewhere asks its holder
(`request_cancel`), and waits for its end. Steer text goes through the store, so any
process can queue it for any turn.

Each run of a turn is traced as one span (when a tracer is given), a child of the call that
started or resumed it, since its task inherits that call's context.

Where a session has hooks (docs/hooks.md), each run has them (`TurnHooks.for_run`): the
turn_start hooks before a prompt's first run, the turn_end hooks when the agent answers
(and, if one asks, the runner goes on once), the notification hooks once it parks; its
channel asks the pre_tool and post_tool hooks as the agent acts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING

import structlog

from blitz import metrics
from blitz.core.active_turn import ActiveTurn, LiveTurns
from blitz.core.driver.endings import FORKABLE_TURNS, interrupted
from blitz.core.driver.interactions import Interactions
from blitz.core.driver.parking import TurnParking, timed_out
from blitz.core.driver.runners import GoesOn, Outcome, Runners, TurnRunner
from blitz.core.driver.slots import RunSlots
from blitz.core.driver.turn_io import TurnChannel
from blitz.core.events.event_log import EventLog, TurnLost
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.hooks.turn_hooks import RunHooks, TurnHooks
from blitz.core.locks import SessionLocks
from blitz.core.requests.pending import PendingRequests
from blitz.core.requests.plans import proposal, proposed_event
from blitz.core.supervisor import Supervisor
from blitz.core.usage import session_usage
from blitz.errors import BlitzError, Reason, internal_error
from blitz.ports import Completed, ImageInput, Parked, Resolution
from blitz.store import (
    SessionChange,
    SessionRecord,
    Store,
    TurnRecord,
    TurnStart,
    TurnState,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["FORKABLE_TURNS", "Turns", "interrupted", "new_turn_id"]

log = structlog.get_logger(__name__)

# What a `session_state` event says.
_State = t.SessionStateChange.State


class Turns(TurnParking):
    """Every unfinished turn of this process, and the tasks that drive them."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        runners: Runners,
        locks: SessionLocks,
        pending: PendingRequests,
        default_max_turns: int,
        default_timeout: timedelta | None,
        owner: str,
        lease: float,
        interactions: Interactions,
        checkpoints: Checkpoints,
        max_running: int = 256,
        refuse_when_full: bool = False,
        tracer: Tracer | None = None,
        hooks: TurnHooks | None = None,
    ) -> None:
        """`runners`: what carries out each kind of turn (runners.py), asked in order.
        `interactions`: the calls people wait on, which agent work gives way to;
        `checkpoints`: what takes each turn's snapshots of its workspace; `max_running`
        runs at once, and past it a new turn waits with a notice, or, with
        `refuse_when_full`, is refused (slots.py); `hooks`: the sessions' hooks (None: the
        server runs none)."""
        # This process, as the holder of the turns it runs, and how long a hold lasts.
        self.owner = owner
        self.lease = lease
        # Called when another process asks something of a turn held here (`on_asked`).
        self._asked: Callable[[], None] = lambda: None
        self._store = store
        self._log = log
        self._runners = runners
        self._locks = locks
        self._pending = pending
        self._default_max_turns = default_max_turns
        self._default_timeout = default_timeout
        self._tracer = tracer
        self._tasks = Supervisor("turns")
        self._live = LiveTurns(count_parked=not store.shared)
        self._slots = RunSlots(max_running, refuse_when_full=refuse_when_full)
        self._interactions = interactions
        self._checkpoints = checkpoints
        self._hooks = hooks
        pending.listen(self)
        log.listen(self)

    # Starting

    async def start(
        self,
        session: SessionRecord,
        turn: t.Turn,
        turn_id: str,
        *,
        prompt: str,
        images: tuple[ImageInput, ...] = (),
    ) -> TurnRecord:
        """Record the turn and its `accepted` event, then drive it in the background.

        Call with the session's lock held; unless the turn is an aside, the session must be
        idle, and it is marked running. RATE_LIMITED when every slot is taken and the
        operator chose to refuse then.
        """
        self._slots.check_room()
        now = time.time()
        timeout = turn.timeout.ToTimedelta() if turn.HasField("timeout") else self._default_timeout
        before = await session_usage(self._store, session.id)
        rec = TurnRecord(
            session_id=session.id,
            turn_id=turn_id,
            state=TurnState.RUNNING,
            turn=turn.SerializeToString(),
            create_time=now,
            deadline=now + timeout.total_seconds() if timeout else None,
            usage_before=before.SerializeToString(),
            owner=self.owner,
            epoch=1,
        )
        claim = None
        if not turn.aside:
            # The session is taken in the same step, if it is still idle: of two processes
            # starting turns in it at once, one does. A new turn supersedes any plan
            # proposed before it (accepted consumes it).
            claim = SessionChange(
                update_time=now,
                state=s.SESSION_STATE_RUNNING,
                turn_id=turn_id,
                plan=None if turn.command else b"",
                expect_state=s.SESSION_STATE_IDLE,
            )
        # The turn as recorded, echoed: the log masks and caps it as it does any event. The
        # turn's row and the session's claim are written with it, and the session's
        # RUNNING goes in the same batch: one transaction for all (the store sets the
        # turn's first_seq from `accepted`).
        start = TurnStart(rec, lease_until=now + self.lease, claim=claim)
        accepted = self._log.commit(
            session.id,
            turn_id,
            t.TurnEvent(accepted=t.Accepted(turn=turn)),
            fence=rec.epoch,
            writes=(start,),
        )
        if not turn.aside:
            self.announce(session.id, _State.STATE_RUNNING, turn_id, fence=rec.epoch)
        try:
            rec.first_seq = (await accepted).seq
        except TurnLost:
            raise await self._not_idle(session.id) from None
        self._begin(ActiveTurn(rec=rec, turn=turn, session=session, prompt=prompt, images=images))
        return rec

    def _begin(self, active: ActiveTurn) -> None:
        """Hold a turn that has just started here, and drive its first run."""
        self._live.add(active)
        metrics.turn_started(_turn_kind(active.turn))
        self._launch(active, None)

    async def _not_idle(self, session_id: str) -> BlitzError:
        """Why a turn could not take the session: it closed, or another turn took it."""
        session = await self._store.get_session(session_id)
        if session is None or session.state == s.SESSION_STATE_CLOSED:
            return BlitzError(
                Reason.SESSION_CLOSED, "the session is closed", {"session_id": session_id}
            )
        return BlitzError(
            Reason.SESSION_BUSY,
            "a turn is already running in this session",
            {"turn_id": session.turn_id},
        )

    # Driving

    def _launch(
        self,
        active: ActiveTurn,
        results: dict[str, Resolution] | None,
        *,
        taken_over: bool = False,
    ) -> None:
        """Drive the turn in a task of its own: its first run, a resume with `results`, or
        the run of a turn `taken_over` from a process that died while it ran."""
        active.task = self._tasks.spawn(
            self._advance(active, results, taken_over=taken_over), name=f"turn-{active.turn_id}"
        )

    async def _advance(
        self,
        active: ActiveTurn,
        results: dict[str, Resolution] | None,
        *,
        taken_over: bool = False,
    ) -> None:
        rec = active.rec
        io = TurnChannel(
            active,
            log=self._log,
            store=self._store,
            pending=self._pending,
            checkpoints=self._checkpoints,
            interactions=self._interactions,
            default_max_turns=self._default_max_turns,
        )
        with (
            structlog.contextvars.bound_contextvars(session_id=rec.session_id, turn_id=rec.turn_id),
            self._span(active, resumed=results is not None) as span,
        ):
            deadline = None
            if rec.deadline is not None:
                deadline = asyncio.get_running_loop().time() + (rec.deadline - time.time())
            try:
                # The calls people wait on go first (interactions.py); then a slot
                # bounds how many turns do work at once: under a burst, the first ones
                # park or finish first instead of all of them at the end.
                await self._interactions.give_way()
                if self._slots.full:
                    waiting = t.TurnEvent(notice=t.Notice(text=self._slots.waiting_notice()))
                    await self._log.commit(rec.session_id, rec.turn_id, waiting, fence=rec.epoch)
                async with self._slots.held():
                    async with asyncio.timeout_at(deadline) as scope:
                        outcome = await self._step(active, io, results, taken_over)
                    await self._settle(active, outcome, io.hooks)
            except TimeoutError:
                if not scope.expired():
                    log.exception("turn_failed")
                    await self.finish(active, error=internal_error())
                else:
                    await self.finish(active, error=timed_out(rec))
            except TurnLost:
                self._lose(active)
            except BlitzError as exc:
                await self.finish(active, error=exc)
            except asyncio.CancelledError:
                if active.lost:
                    raise  # another process holds it now: nothing more is written here
                reason = active.cancel_reason or BlitzError(
                    Reason.SERVER_RESTARTED, "the server stopped while the turn was running"
                )
                await self.finish(active, error=reason)
                raise
            except Exception:
                log.exception("turn_failed")
                await self.finish(active, error=internal_error())
            finally:
                if io.hooks is not None:
                    await io.hooks.aclose()
                if active.task is asyncio.current_task():
                    active.task = None
                if span is not None:
                    span.set_attribute("blitz.turn.state", rec.state.value)

    def _span(self, active: ActiveTurn, *, resumed: bool) -> AbstractContextManager[Span | None]:
        """The trace span of one run of the turn; none without a tracer."""
        if self._tracer is None:
            return contextlib.nullcontext()
        return self._tracer.start_as_current_span(
            "blitz.turn",
            attributes={
                "blitz.session_id": active.session_id,
                "blitz.turn_id": active.turn_id,
                "blitz.turn.kind": _turn_kind(active.turn),
                "blitz.turn.resumed": resumed,
            },
        )

    async def _step(
        self,
        active: ActiveTurn,
        io: TurnChannel,
        results: dict[str, Resolution] | None,
        taken_over: bool,
    ) -> Outcome:
        """One run of the turn, by the runner that claims it (runners.py), with its hooks."""
        runner = self._runners.of(active.turn, active.session)
        hooks = io.hooks = None if self._hooks is None else await self._hooks.for_run(active, io)
        prompted = not active.turn.command  # a prompt, not a slash command or a workflow
        if taken_over:
            outcome = await runner.take_over(active, io)
        elif results is None:
            if hooks is not None and prompted:
                await hooks.turn_start()
            outcome = await runner.start(active, io)
        else:
            outcome = await runner.resume(active, io, results)
        if hooks is None:
            return outcome
        # A turn_end hook may have the agent go on, once a turn (turn_hooks.py).
        while isinstance(outcome, Completed) and prompted and not active.aside:
            if not isinstance(runner, GoesOn):
                break
            text = await hooks.turn_end(outcome.output)
            if text is None:
                break
            outcome = await runner.go_on(active, io, outcome, text)
        await hooks.settle(parked=isinstance(outcome, Parked))
        return outcome

    async def survives(self, rec: TurnRecord) -> bool:
        """Whether a turn left running by a process that died can go on (its runner's
        word); if not, it ends with SERVER_RESTARTED (recovery.py)."""
        session = await self._store.get_session(rec.session_id)
        if session is None:
            return False
        return await self._runners.of(t.Turn.FromString(rec.turn), session).survives(rec)

    def take_over(self, active: ActiveTurn) -> None:
        """Go on with a turn taken over from a process that died while it ran, as its
        runner says (a workflow run: at the step it was in)."""
        self._launch(active, None, taken_over=True)

    def runner_of(self, active: ActiveTurn) -> TurnRunner:
        """What carries out the turn (endings.py tells it of the turn's end)."""
        return self._runners.of(active.turn, active.session)

    async def _settle(
        self, active: ActiveTurn, outcome: Completed | Parked | str, hooks: RunHooks | None
    ) -> None:
        """Act on how a run ended: park it (and tell the notification hooks), or finish the
        turn."""
        if isinstance(outcome, Parked):
            if active.aside:
                await self.finish(active, error=_aside_cannot_wait())
            else:
                await self._park(active, outcome)
                if hooks is not None and active.rec.state == TurnState.PARKED:
                    await hooks.notification(outcome.requests)
        elif isinstance(outcome, str):
            await self.finish(active, output=outcome)
        else:
            sid = active.session_id
            if not active.aside:  # an aside is not recorded into the history
                active.history = outcome.history  # written with the turn's end
            if active.plan:
                tid = active.turn_id
                await self._store.update_session(
                    sid,
                    SessionChange(
                        update_time=time.time(),
                        plan=proposal(tid, active.todo, outcome.output),
                        expect_turn_id=tid,
                    ),
                )
                proposed = proposed_event(tid, active.todo, outcome.output)
                await self._log.commit(sid, tid, proposed, fence=active.rec.epoch)
            await self.finish(active, output=outcome.output)


def _aside_cannot_wait() -> BlitzError:
    return BlitzError(
        Reason.INVALID_ARGUMENT,
        "an aside turn cannot wait for an approval or an answer",
        {"field": "turn.aside"},
    )


def _turn_kind(turn: t.Turn) -> str:
    """main, aside or command: how metrics and traces tell turns apart."""
    return "command" if turn.command else "aside" if turn.aside else "main"


def new_turn_id() -> str:
    return "t_" + uuid.uuid4().hex
