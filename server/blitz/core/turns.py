"""The turn runner: starts, parks, resumes and finishes turns.

A turn is a durable log of events plus a small resumable state (its `TurnRecord`). While
it runs, one task of this process drives the agent. When the agent stops on requests that
need a person, the turn is *parked*: its message history and open requests are stored and
the task ends — no coroutine waits for the answer. The answer (Decide/Answer) resumes the
turn from what is stored, in whichever process receives it, after a restart included.

Every turn ends with exactly one `finished` event, whatever happened: an answer, an
error, a cancel, a deadline, a shutdown. The per-session lock orders a turn's last steps
(state to idle, `finished` committed) before the next turn's first.
"""

from __future__ import annotations

import asyncio
import time
import uuid
import weakref
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import structlog

from blitz.core.approvals import Outcome, covering_rule, outcome_from_json, result_of
from blitz.core.event_log import EventLog
from blitz.core.slash_commands import CommandContext, parse_command, plan_record, run_command
from blitz.core.usage import session_usage
from blitz.errors import BlitzError, Reason, internal_error
from blitz.ports.agent import (
    AgentPort,
    Completed,
    ImageInput,
    ModelCallUsage,
    Parked,
    Resolution,
    TurnPolicy,
)
from blitz.redact import redact_event
from blitz.store import LedgerRow, PendingRecord, RuleRecord, SessionRecord, Store, TurnRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["ActiveTurn", "TurnRunner"]

log = structlog.get_logger(__name__)

RUNNING, PARKED, FINISHED = "running", "parked", "finished"

# How many of a session's last events recovery reads to find the resolutions a parked
# turn already announced: its requests and their answers are the session's last events.
_SETTLE_SCAN = 1000


@dataclass
class ActiveTurn:
    """A turn that has not finished, as this process holds it."""

    rec: TurnRecord
    turn: t.Turn
    session: SessionRecord
    # The task driving the agent while running here; None while parked.
    task: asyncio.Task[None] | None = None
    # Sleeps until the parked turn's next deadline.
    timer: asyncio.Task[None] | None = None
    # Why the task was cancelled, reported in `finished.error`.
    cancel_reason: BlitzError | None = None
    # The task list as the agent last set it in this turn.
    tasks: t.Tasks | None = None
    # The model's prompt and attached images, for the first run only.
    prompt: str = ""
    images: tuple[ImageInput, ...] = ()

    @property
    def aside(self) -> bool:
        return self.turn.aside

    def policy(self, *, first: bool) -> TurnPolicy:
        turn = self.turn
        return TurnPolicy(
            read_only=turn.read_only,
            plan=turn.plan,
            aside=turn.aside,
            fetch_grants=tuple(turn.fetch_grants),
            images=self.images if first else (),
        )


class _TurnIO:
    """The agent's view of one turn run (blitz.ports.agent.TurnIO)."""

    def __init__(self, runner: TurnRunner, active: ActiveTurn) -> None:
        self._runner = runner
        self._active = active
        self._sid = active.rec.session_id
        self._tid = active.rec.turn_id
        self._log = runner.log

    def emit(self, event: t.TurnEvent) -> None:
        event.turn_id = self._tid
        if event.WhichOneof("kind") != "text":  # text is the hot path: nothing to do for it
            if event.HasField("tasks") and not event.author:  # a sub-agent's list is its own
                self._active.tasks = t.Tasks(items=event.tasks.items)
            redact_event(event)
        self._log.emit(self._sid, event)

    async def commit(self, event: t.TurnEvent) -> None:
        event.turn_id = self._tid
        await self._log.commit(self._sid, redact_event(event))

    async def rule_approves(self, approval: t.ApprovalRequest) -> bool:
        event = redact_event(t.TurnEvent(approval_request=approval))
        rules = await self._runner.rules_of(self._active.session)
        rule = covering_rule(rules, event.approval_request)
        if rule is None:
            return False
        await self._runner.announce_rule(self._active, approval.request_id, rule)
        return True

    async def before_model_call(self) -> list[str]:
        rec = self._active.rec
        limit = self._active.turn.max_turns or self._runner.default_max_turns
        if rec.model_calls >= limit:
            raise BlitzError(
                Reason.MAX_TURNS,
                f"the turn reached its limit of {limit} model calls",
                {"max_turns": str(limit)},
            )
        cap = self._active.turn.max_cost_usd
        if cap > 0 and rec.cost_usd >= cap:
            raise BlitzError(
                Reason.BUDGET_EXCEEDED,
                f"the turn reached its cost cap of ${cap:.4f}",
                {"max_cost_usd": repr(cap), "cost_usd": repr(rec.cost_usd)},
            )
        rec.model_calls += 1
        steer, rec.steer = rec.steer, []
        return steer

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        self._active.rec.cost_usd += usage.cost_usd
        await self._runner.store.add_ledger(
            LedgerRow(
                session_id=self._sid,
                turn_id=self._tid,
                model=usage.model,
                input=usage.input,
                cached=usage.cached,
                cache_write=usage.cache_write,
                output=usage.output,
                cost_usd=usage.cost_usd,
                priced=usage.priced,
                search_queries=usage.search_queries,
                search_cost_usd=usage.search_cost_usd,
                time=time.time(),
            )
        )


class TurnRunner:
    """Owns every unfinished turn of this process and the tasks that drive them."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        agent: AgentPort,
        workspace_root: Path,
        default_max_turns: int,
        default_timeout: timedelta | None,
        approval_timeout: timedelta | None,
    ) -> None:
        self.store = store
        self.log = log
        self.agent = agent
        self.workspace_root = workspace_root
        self.default_max_turns = default_max_turns
        self.default_timeout = default_timeout
        self.approval_timeout = approval_timeout
        self._active: dict[str, ActiveTurn] = {}  # main turns, by session id
        self._asides: dict[str, ActiveTurn] = {}  # aside turns, by turn id
        # Held locks are referenced by their holders and waiters; idle ones may go.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

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
        idle, and it is marked running.
        """
        now = time.time()
        timeout = turn.timeout.ToTimedelta() if turn.HasField("timeout") else self.default_timeout
        before = await session_usage(self.store, session.id)
        rec = TurnRecord(
            session_id=session.id,
            turn_id=turn_id,
            state=RUNNING,
            turn=turn.SerializeToString(),
            create_time=now,
            deadline=now + timeout.total_seconds() if timeout else None,
            usage_before=before.SerializeToString(),
        )
        await self.store.create_turn(rec)
        if not turn.aside:
            await self.store.set_session_state(
                session.id, state=s.SESSION_STATE_RUNNING, turn_id=turn_id, now=now
            )
            if not turn.command:
                # A new turn supersedes any plan proposed before it (accepted consumes it).
                await self.store.set_plan(session.id, None)
        accepted = await self.log.commit(
            session.id, t.TurnEvent(turn_id=turn_id, accepted=t.Accepted())
        )
        rec.first_seq = accepted.seq
        await self.store.update_turn(rec)
        active = ActiveTurn(rec=rec, turn=turn, session=session, prompt=prompt, images=images)
        self._remember(active)
        self._drive(active, None)
        return rec

    def _remember(self, active: ActiveTurn) -> None:
        if active.aside:
            self._asides[active.rec.turn_id] = active
        else:
            self._active[active.rec.session_id] = active

    def _forget(self, active: ActiveTurn) -> None:
        if active.aside:
            self._asides.pop(active.rec.turn_id, None)
        elif self._active.get(active.rec.session_id) is active:
            del self._active[active.rec.session_id]

    def asides_of(self, session_id: str) -> list[ActiveTurn]:
        """The session's aside turns running in this process."""
        return [a for a in self._asides.values() if a.rec.session_id == session_id]

    def find(self, session_id: str, turn_id: str) -> ActiveTurn | None:
        """An aside turn of this process by id (main turns: `active_turn`)."""
        active = self._asides.get(turn_id)
        return active if active is not None and active.rec.session_id == session_id else None

    def _drive(self, active: ActiveTurn, results: dict[str, Resolution] | None) -> None:
        active.task = asyncio.create_task(
            self._run(active, results), name=f"turn-{active.rec.turn_id}"
        )

    async def _run(self, active: ActiveTurn, results: dict[str, Resolution] | None) -> None:
        rec = active.rec
        io = _TurnIO(self, active)
        with structlog.contextvars.bound_contextvars(
            session_id=rec.session_id, turn_id=rec.turn_id
        ):
            deadline = None
            if rec.deadline is not None:
                deadline = asyncio.get_running_loop().time() + (rec.deadline - time.time())
            try:
                async with asyncio.timeout_at(deadline) as scope:
                    outcome = await self._step(active, io, results)
                await self._settle(active, outcome)
            except TimeoutError:
                if not scope.expired():
                    log.exception("turn_failed")
                    await self.finish(active, error=internal_error())
                else:
                    await self.finish(active, error=_timed_out(rec))
            except BlitzError as exc:
                await self.finish(active, error=exc)
            except asyncio.CancelledError:
                reason = active.cancel_reason or BlitzError(
                    Reason.SERVER_RESTARTED, "the server stopped while the turn was running"
                )
                await self.finish(active, error=reason)
                raise
            except Exception:
                log.exception("turn_failed")
                await self.finish(active, error=internal_error())
            finally:
                if active.task is asyncio.current_task():
                    active.task = None

    async def _step(
        self, active: ActiveTurn, io: _TurnIO, results: dict[str, Resolution] | None
    ) -> Completed | Parked | str:
        """One run of the turn: a server command, the agent's first run, or a resume."""
        rec, session = active.rec, active.session
        workspace = self.workspace_root / session.workspace
        if active.turn.command:
            name, arg = parse_command(active.turn.text)
            log.info("command_started", command=name)
            return await run_command(
                name,
                arg,
                CommandContext(
                    store=self.store,
                    session_id=session.id,
                    model=session.model,
                    io=io,
                    agent=self.agent,
                ),
            )
        if results is None:
            log.info("turn_started")
            return await self.agent.start(
                io=io,
                model=session.model,
                workspace=workspace,
                history=await self.store.get_history(rec.session_id),
                prompt=active.prompt,
                policy=active.policy(first=True),
            )
        log.info("turn_resumed")
        assert rec.history is not None
        return await self.agent.resume(
            io=io,
            model=session.model,
            workspace=workspace,
            history=rec.history,
            results=results,
            policy=active.policy(first=False),
        )

    async def _settle(self, active: ActiveTurn, outcome: Completed | Parked | str) -> None:
        """Act on how a run ended: park it, or finish the turn."""
        if isinstance(outcome, Parked):
            if active.aside:
                await self.finish(active, error=_aside_cannot_wait())
            else:
                await self._park(active, outcome)
        elif isinstance(outcome, str):
            await self.finish(active, output=outcome)
        else:
            await self._completed(active, outcome)

    async def _completed(self, active: ActiveTurn, done: Completed) -> None:
        sid = active.rec.session_id
        if not active.aside:  # an aside is not recorded into the history
            await self.store.set_history(sid, done.history)
        if active.turn.plan:
            await self.store.set_plan(sid, plan_record(active.tasks, done.output))
        await self.finish(active, output=done.output)

    # Parking and resuming

    async def rules_of(self, session: SessionRecord) -> list[RuleRecord]:
        return await self.store.rules_for(
            session_id=session.id, workspace=session.workspace, caller=session.owner
        )

    async def announce_rule(self, active: ActiveTurn, request_id: str, rule: RuleRecord) -> Outcome:
        """Tell watchers that a rule approved an action without asking."""
        decision = t.DECISION_ALWAYS if rule.scope == s.RULE_SCOPE_ALWAYS else t.DECISION_SESSION
        outcome = Outcome.approval(request_id, decision, via="rule", rule_id=rule.id)
        sid, tid = active.rec.session_id, active.rec.turn_id
        self.log.emit(
            sid,
            t.TurnEvent(
                turn_id=tid, notice=t.Notice(text=f"Approved by rule {rule.scope_label!r}.")
            ),
        )
        await self.log.commit(sid, t.TurnEvent(turn_id=tid, resolution=outcome.event))
        return outcome

    async def _park(self, active: ActiveTurn, parked: Parked) -> None:
        """Store the open requests and stop; requests a rule covers are approved at once."""
        rec = active.rec
        sid = rec.session_id
        async with self.lock(sid):
            rules = await self.rules_of(active.session)
            wait = active.session.approval_timeout
            if wait is None and self.approval_timeout:
                wait = self.approval_timeout.total_seconds()
            expires = time.time() + wait if wait else None
            pending: list[PendingRecord] = []
            settled: dict[str, Resolution] = {}
            to_announce: list[t.TurnEvent] = []
            for event in parked.requests:
                event.turn_id = rec.turn_id
                redact_event(event)
                request_id = _request_id(event)
                is_approval = event.HasField("approval_request")
                rule = covering_rule(rules, event.approval_request) if is_approval else None
                record = PendingRecord(
                    session_id=sid,
                    request_id=request_id,
                    turn_id=rec.turn_id,
                    event=b"",
                    expires=expires,
                )
                if rule is not None:
                    outcome = await self.announce_rule(active, request_id, rule)
                    assert outcome.result is not None
                    record.resolution = outcome.to_json()
                    settled[request_id] = outcome.result
                else:
                    to_announce.append(event)
                record.event = event.SerializeToString()
                pending.append(record)
            # Stored before anyone hears of them, so that whatever a client has seen can be
            # answered, and a process that dies now leaves requests `finish` withdraws.
            await self.store.add_pending(pending)
            for event in to_announce:
                await self.log.commit(sid, event)
                await self.store.set_pending_event(
                    sid, _request_id(event), event.SerializeToString()
                )
            rec.history = parked.history
            if len(settled) == len(pending):
                await self.store.update_turn(rec)
                self._drive(active, settled)
                return
            rec.state = PARKED
            await self.store.update_turn(rec)
            await self.store.set_session_state(
                sid, state=s.SESSION_STATE_PARKED, turn_id=rec.turn_id, now=time.time()
            )
            log.info("turn_parked", requests=len(pending) - len(settled))
            self._arm(active)

    def _arm(self, active: ActiveTurn) -> None:
        """Start the timer that ends or nudges a parked turn at its next deadline."""
        if active.timer is not None:
            active.timer.cancel()
        active.timer = asyncio.create_task(
            self._parked_timer(active), name=f"turn-timer-{active.rec.turn_id}"
        )

    async def _parked_timer(self, active: ActiveTurn) -> None:
        try:
            await self._on_parked_deadline(active)
        except Exception:
            # The turn stays parked and answerable; its deadline is re-armed on restart.
            log.exception("parked_timer_failed", turn_id=active.rec.turn_id)

    async def _on_parked_deadline(self, active: ActiveTurn) -> None:
        rec = active.rec
        pending = await self.store.list_pending(rec.session_id, turn_id=rec.turn_id)
        expiries = [p.expires for p in pending if p.expires is not None]
        times = [x for x in (rec.deadline, min(expiries, default=None)) if x is not None]
        if not times:
            return
        await asyncio.sleep(max(0.0, min(times) - time.time()))
        active.timer = None  # this task is ending; do not let finish() cancel it
        if rec.deadline is not None and time.time() >= rec.deadline:
            await self.finish(active, error=_timed_out(rec))
            return
        for p in pending:
            if p.expires is not None and p.expires <= time.time():
                event = t.TurnEvent.FromString(p.event)
                if event.HasField("approval_request"):
                    outcome = Outcome.approval(
                        p.request_id,
                        t.DECISION_DENY,
                        reason="the approval request timed out",
                        via="timeout",
                    )
                    text = f"Approval for {event.approval_request.detail!r} timed out: denied."
                else:
                    outcome = Outcome.answer(p.request_id, (), via="timeout")
                    text = "The question timed out with no answer."
                if await self.resolve(p, outcome, notice=text):
                    log.info("request_timed_out", request_id=p.request_id)
        if active.rec.state == PARKED and active.timer is None:
            self._arm(active)

    async def active_turn(self, session: SessionRecord) -> ActiveTurn | None:
        """The session's unfinished turn, loaded from the store if this process lacks it."""
        if not session.turn_id:
            return None
        active = self._active.get(session.id)
        if active is not None and active.rec.turn_id == session.turn_id:
            return active
        rec = await self.store.get_turn(session.id, session.turn_id)
        if rec is None or rec.state == FINISHED:
            return None
        active = ActiveTurn(rec=rec, turn=t.Turn.FromString(rec.turn), session=session)
        self._active[session.id] = active
        return active

    async def resolve(
        self,
        pending: PendingRecord,
        outcome: Outcome,
        *,
        notice: str = "",
        rule: RuleRecord | None = None,
    ) -> bool:
        """Record the first resolution of a request; resume the turn once none is open.

        False when the request was already resolved (the caller lost the race). A `rule`
        (from a SESSION or ALWAYS decision) is stored only by the winner.
        """
        sid = pending.session_id
        async with self.lock(sid):
            if not await self.store.resolve_pending(sid, pending.request_id, outcome.to_json()):
                return False
            if rule is not None:
                await self.store.add_rule(rule)
            if notice:
                self.log.emit(
                    sid, t.TurnEvent(turn_id=pending.turn_id, notice=t.Notice(text=notice))
                )
            await self.log.commit(
                sid, t.TurnEvent(turn_id=pending.turn_id, resolution=outcome.event)
            )
            await self._resume_if_answered(sid, pending.turn_id)
            return True

    async def _resume_if_answered(self, sid: str, turn_id: str) -> None:
        """Resume a parked turn once none of its requests is open. Call with the lock held."""
        if await self.store.list_pending(sid, turn_id=turn_id):
            return  # others still open
        session = await self.store.get_session(sid)
        if session is None or session.turn_id != turn_id:
            return
        active = await self.active_turn(session)
        if active is None or active.cancel_reason is not None:
            return  # being cancelled: the cancel ends it
        if not await self.store.set_turn_state(sid, turn_id, state=RUNNING, expect=PARKED):
            return
        rec = active.rec
        rec.state = RUNNING
        results: dict[str, Resolution] = {}
        for p in await self.store.list_pending(sid, turn_id=turn_id, open_only=False):
            result = result_of(p.request_id, p.resolution) if p.resolution else None
            if result is not None:
                results[p.request_id] = result
        await self.store.set_session_state(
            sid, state=s.SESSION_STATE_RUNNING, turn_id=turn_id, now=time.time()
        )
        if active.timer is not None:
            active.timer.cancel()
            active.timer = None
        self._drive(active, results)

    async def _settle_parked(self, active: ActiveTurn) -> None:
        """Complete the answers a dead process stored for a parked turn.

        It may have died after storing a resolution and before announcing it, or before
        resuming the turn it answered last: announce what is missing, then resume the turn
        if none of its requests is open.
        """
        sid, turn_id = active.rec.session_id, active.rec.turn_id
        async with self.lock(sid):
            rows = await self.store.list_pending(sid, turn_id=turn_id, open_only=False)
            resolved = [p for p in rows if p.resolution is not None]
            if not resolved:
                return
            last = await self.store.last_seq(sid)
            since = await self.store.read_events(
                sid, after_seq=max(0, last - _SETTLE_SCAN), limit=_SETTLE_SCAN
            )
            announced = {
                event.resolution.request_id
                for event in (t.TurnEvent.FromString(row.data) for row in since)
                if event.HasField("resolution")
            }
            for p in resolved:
                if p.request_id not in announced:
                    assert p.resolution is not None
                    outcome = outcome_from_json(p.request_id, p.resolution)
                    await self.log.commit(
                        sid, t.TurnEvent(turn_id=turn_id, resolution=outcome.event)
                    )
            await self._resume_if_answered(sid, turn_id)

    # Steering, cancelling, finishing

    async def steer(self, active: ActiveTurn, text: str) -> None:
        """Queue text for the turn's next model call; refused once the turn has ended.

        Under the lock, so that text cannot land after `finish` took the leftovers.
        """
        async with self.lock(active.rec.session_id):
            if active.rec.state == FINISHED:
                raise BlitzError(
                    Reason.NO_RUNNING_TURN,
                    "the turn has finished",
                    {"session_id": active.rec.session_id, "turn_id": active.rec.turn_id},
                )
            active.rec.steer.append(text)
            await self.store.update_turn(active.rec)

    async def cancel(self, active: ActiveTurn, reason: BlitzError) -> None:
        """Stop the turn; returns once its `finished` event is in the log.

        The turn is marked under the lock, so that an answer being handled at the same
        moment either resumes it before (and its task is cancelled here) or not at all.
        """
        async with self.lock(active.rec.session_id):
            active.cancel_reason = reason
            task = active.task
            if task is not None:
                task.cancel()
        if task is not None:
            await asyncio.wait({task})
        else:
            await self.finish(active, error=reason)

    async def finish(
        self, active: ActiveTurn, *, output: str = "", error: BlitzError | None = None
    ) -> None:
        """End the turn with its `finished` event, exactly once.

        Shielded: a cancel that lands halfway must not leave a turn marked finished in the
        store without its `finished` event in the log.
        """
        await asyncio.shield(self._finish(active, output=output, error=error))

    async def _finish(self, active: ActiveTurn, *, output: str, error: BlitzError | None) -> None:
        rec = active.rec
        sid = rec.session_id
        async with self.lock(sid):
            if rec.state == FINISHED:
                return
            for p in await self.store.list_pending(sid, turn_id=rec.turn_id):
                outcome = Outcome.withdrawn(p.request_id)
                if await self.store.resolve_pending(sid, p.request_id, outcome.to_json()):
                    await self.log.commit(
                        sid, t.TurnEvent(turn_id=rec.turn_id, resolution=outcome.event)
                    )
            after = await session_usage(self.store, sid)
            leftover, rec.steer = rec.steer, []
            finished = t.TurnFinished(
                output=output,
                before=t.Usage.FromString(rec.usage_before),
                after=after,
                leftover=leftover,
            )
            if error is not None:
                finished.error.CopyFrom(error.to_proto())
            # The session is let go, the end goes into the log, and only then is the turn
            # recorded as finished: a process that dies in between leaves a turn still
            # running or parked in the store, which `recover` completes from the log.
            await self._release_session(active)
            await self.log.commit(sid, t.TurnEvent(turn_id=rec.turn_id, finished=finished))
            log.info(
                "turn_finished",
                session_id=sid,
                turn_id=rec.turn_id,
                error=error.reason.wire if error else None,
            )
            await self._record_finished(active)
            self._forget(active)
            timer, active.timer = active.timer, None
            if timer is not None and timer is not asyncio.current_task():
                timer.cancel()

    async def _release_session(self, active: ActiveTurn) -> None:
        """Save the turn's task list and mark its session idle (or keep it closed)."""
        sid = active.rec.session_id
        if active.aside:
            return  # an aside leaves the session as it found it, task list included
        if active.tasks is not None:
            await self.store.set_tasks(sid, active.tasks.SerializeToString())
        session = await self.store.get_session(sid)
        closed = session is not None and session.state == s.SESSION_STATE_CLOSED
        await self.store.set_session_state(
            sid,
            state=s.SESSION_STATE_CLOSED if closed else s.SESSION_STATE_IDLE,
            turn_id="",
            now=time.time(),
        )

    async def _record_finished(self, active: ActiveTurn) -> None:
        """Record as finished a turn whose `finished` event is in the log."""
        rec = active.rec
        rec.state = FINISHED
        rec.history = None
        await self.store.update_turn(rec)

    # Process life

    async def recover(self) -> None:
        """After a start: settle what a dead process left of its turns.

        A turn it died starting gets the `accepted` every turn has; one it died finishing has
        its records follow its `finished`; one it was running ends with SERVER_RESTARTED;
        a parked one in a session it was closing is cancelled; other parked ones wait on,
        their timers armed again, and resume if it stored answers to all their requests.
        """
        for state in (RUNNING, PARKED):
            for rec in await self.store.turns_in_state(state):
                session = await self.store.get_session(rec.session_id)
                if session is None:
                    continue
                active = ActiveTurn(rec=rec, turn=t.Turn.FromString(rec.turn), session=session)
                last = await self.store.last_event_of_turn(rec.session_id, rec.turn_id)
                if last is None:
                    accepted = await self.log.commit(
                        rec.session_id, t.TurnEvent(turn_id=rec.turn_id, accepted=t.Accepted())
                    )
                    rec.first_seq = accepted.seq
                elif t.TurnEvent.FromString(last.data).HasField("finished"):
                    await self._release_session(active)
                    await self._record_finished(active)
                    continue
                if state == RUNNING or session.turn_id != rec.turn_id:  # or it was ending
                    await self.finish(
                        active,
                        error=BlitzError(
                            Reason.SERVER_RESTARTED,
                            "the server restarted while the turn was running",
                        ),
                    )
                elif session.state == s.SESSION_STATE_CLOSED:  # it died closing the session
                    await self.finish(
                        active, error=BlitzError(Reason.CANCELLED, "the session was closed")
                    )
                elif (parked := await self.active_turn(session)) is not None:
                    self._arm(parked)
                    await self._settle_parked(parked)

    async def drain(self, grace: float) -> None:
        """Let running turns finish for up to `grace` s, then stop them; park timers."""
        running = [*self._active.values(), *self._asides.values()]
        tasks = {a.task for a in running if a.task is not None}
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for active in [*self._active.values(), *self._asides.values()]:
            if active.task is not None:
                await self.cancel(
                    active,
                    BlitzError(
                        Reason.SERVER_RESTARTED, "the server stopped while the turn was running"
                    ),
                )
        timers = [a.timer for a in self._active.values() if a.timer is not None]
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*timers, return_exceptions=True)


def _request_id(event: t.TurnEvent) -> str:
    if event.HasField("approval_request"):
        return event.approval_request.request_id
    return event.question.request_id


def _aside_cannot_wait() -> BlitzError:
    return BlitzError(
        Reason.INVALID_ARGUMENT,
        "an aside turn cannot wait for an approval or an answer",
        {"field": "turn.aside"},
    )


def _timed_out(rec: TurnRecord) -> BlitzError:
    return BlitzError(
        Reason.TURN_TIMEOUT,
        "the turn passed its deadline",
        {"deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(rec.deadline or 0))},
    )


def new_turn_id() -> str:
    return "t_" + uuid.uuid4().hex
