"""SessionService, transport-free: the session port (`blitz.ports.SessionPort`) implemented.

`SessionCore` is handed its parts by `blitz.assembly` (the event log, the locks, the
pending requests, the turn driver, recovery), keeps this process's leases on a shared
store, and serves every call: the session lifecycle is `sessions.py`'s, the answers to
requests `decisions.py`'s, RewindSession `rewind.py`'s (with the turns' checkpoints,
`checkpoints.py`), GetServerInfo and ListCommands `server_info.py`'s, and here are the
turns (RunTurn, AcceptPlan, RejectPlan, ListTurns, Cancel, Steer), Watch and GetUsage.
Each call checks its request (`validation.py`), finds the caller's session, acts through
the turn driver, the pending requests and the store, and answers with the views of
`views.py`. Streams read the event log. It never sees a wire; every failure a client
should see is a `BlitzError` from the catalog in `blitz.errors`.

No answer may outgrow a stock gRPC client (4 MiB): a page of ListSessions ends early once
its views fill `ANSWER_BUDGET` (its token then leads on from there), GetUsage lists the
newest ledger entries that fit it, and a session holds at most `RULES_MAX` rules, so
ListRules stays small too.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack, aclosing
from pathlib import Path
from types import TracebackType

from blitz import metrics
from blitz.core.api import validation as check
from blitz.core.api.decisions import RULES_MAX, DecisionCalls
from blitz.core.api.pages import fill_page
from blitz.core.api.rewind import RewindCalls
from blitz.core.api.server_info import PROTOCOL_REVISION, ServerFacts, ServerInfoCalls
from blitz.core.api.session_watch import SessionWatchCalls
from blitz.core.api.sessions import SessionCalls
from blitz.core.api.views import ledger_entry, turn_summary
from blitz.core.driver.interactions import Interactions
from blitz.core.driver.leases import Leases
from blitz.core.driver.prompt import title_of, turn_images, turn_prompt
from blitz.core.driver.queue import interrupted_by
from blitz.core.driver.recovery import Recovery
from blitz.core.driver.turns import FORKABLE_TURNS, Turns, new_turn_id
from blitz.core.events.event_log import EventLog
from blitz.core.events.session_feed import SessionFeed
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.locks import SessionLocks
from blitz.core.requests.pending import PendingRequests
from blitz.core.requests.plans import no_plan, open_plan, read_plan, rejection
from blitz.core.usage import session_usage, turn_usage
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import AgentPort, CallContext
from blitz.repos import Repositories
from blitz.size_limits import ANSWER_BUDGET
from blitz.store import SessionChange, SessionRecord, Store, TurnPage, TurnRecord, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = [
    "CHECKPOINT_TURNS",
    "PROTOCOL_REVISION",
    "RULES_MAX",
    "FindSession",
    "ServerFacts",
    "SessionCore",
    "replica_name",
]

# One more turn than a session can be rewound or forked at keeps its checkpoints: the
# files at a server command's turn are those at the end of the turn before.
CHECKPOINT_TURNS = FORKABLE_TURNS + 1

FindSession = Callable[[str, CallContext], Awaitable[SessionRecord]]
"""The caller's session by its id, or SESSION_NOT_FOUND (another principal's is not
found): `SessionCore.session_record`, which the other services look their sessions up by."""


def replica_name() -> str:
    """This process, as the holder of what it holds in the store (turns, deliveries): host,
    pid and a random part, so that a restarted process is another holder."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class SessionCore(SessionCalls, DecisionCalls, RewindCalls, ServerInfoCalls, SessionWatchCalls):
    """Every SessionService call, taking and returning protobuf messages: the session
    lifecycle (`SessionCalls`, sessions.py), the answers to requests (`DecisionCalls`,
    decisions.py), RewindSession (`RewindCalls`, rewind.py), GetServerInfo and
    ListCommands (`ServerInfoCalls`, server_info.py), and here the turns, their streams and
    usage.

    Its parts (the event log, the locks, the turn driver and the rest) are built and
    handed over by `blitz.assembly`, which also opens the event log before this and
    closes it after. Use as `async with SessionCore(...) as core:`; entering settles what
    a dead process left (recovery) and, on a shared store, keeps this process's leases,
    leaving drains running turns. Methods raise `BlitzError`; streams may raise it mid-way
    too.
    """

    def __init__(
        self,
        *,
        store: Store,
        agent: AgentPort,
        log: EventLog,
        locks: SessionLocks,
        turns: Turns,
        pending: PendingRequests,
        interactions: Interactions,
        checkpoints: Checkpoints,
        recovery: Recovery,
        workspace_root: Path,
        default_model: str = "demo",
        drain_timeout: float = 10.0,
        facts: ServerFacts | None = None,
        allow_bypass_mode: bool = False,
        repos: Repositories | None = None,
        feed: SessionFeed | None = None,
    ) -> None:
        """`turns`: the turn driver, over the same `log`, `locks`, `pending` requests,
        `interactions` and `checkpoints`; `recovery` settles what a dead process left of
        its turns. `allow_bypass_mode`: sessions and turns may ask for the bypass mode."""
        self._store = store
        self._agent = agent
        self._log = log
        self._locks = locks
        self._turns = turns
        self._pending = pending
        # The calls people wait on (admissions, Decides): agent work gives way to them.
        self._interactions = interactions
        self._checkpoints = checkpoints
        self._recovery = recovery
        self._workspace_root = Path(workspace_root)
        self._default_model = default_model
        self._facts = facts or ServerFacts()
        self._bypass_allowed = allow_bypass_mode
        self._repos = repos
        # The sessions that changed, for WatchSessions (the event log marks them too).
        self._feed = feed or SessionFeed()
        self._drain_timeout = drain_timeout
        self._leases = AsyncExitStack()
        self._uncount = lambda: None

    async def __aenter__(self) -> SessionCore:
        self._workspace_root.mkdir(parents=True, exist_ok=True)
        self._uncount = metrics.count_live(self._live_counts)
        try:
            await self._recovery.at_start()
            if self._store.shared:
                await self._leases.enter_async_context(
                    Leases(store=self._store, turns=self._turns, recovery=self._recovery)
                )
        except BaseException:
            self._uncount()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._turns.drain(self._drain_timeout)
            await self._leases.aclose()
        finally:
            self._uncount()

    def _live_counts(self) -> metrics.LiveCounts:
        return metrics.LiveCounts(
            turns_running=self._turns.count(TurnState.RUNNING),
            turns_parked=self._turns.count(TurnState.PARKED),
            watchers=self._log.watchers,
            agent_steps_waiting=self._interactions.waiting,
        )

    # Turns

    async def list_turns(self, req: s.ListTurnsRequest, ctx: CallContext) -> s.ListTurnsResponse:
        size, after = check.turn_page(req)
        session = await self.session_record(req.session_id, ctx)
        recs = await self._store.list_turns(
            TurnPage(session_id=session.id, limit=size + 1, after=after)
        )
        usage = turn_usage(await self._store.ledger(session.id))

        async def summary(rec: TurnRecord) -> s.TurnSummary:
            return await self._summary(session.id, rec, usage.get(rec.turn_id))

        resp = s.ListTurnsResponse()
        resp.next_page_token = await fill_page(recs, size, summary, resp.turns)
        return resp

    async def get_turn(self, req: s.GetTurnRequest, ctx: CallContext) -> s.TurnSummary:
        check.require(req.turn_id, "turn_id")
        session = await self.session_record(req.session_id, ctx)
        rec = await self._store.get_turn(session.id, req.turn_id)
        if rec is None:
            raise BlitzError(
                Reason.TURN_NOT_FOUND,
                f"no turn {req.turn_id!r} in this session",
                {"turn_id": req.turn_id},
            )
        usage = turn_usage(await self._store.ledger(session.id))
        return await self._summary(session.id, rec, usage.get(rec.turn_id))

    async def _summary(
        self, session_id: str, rec: TurnRecord, usage: t.Usage | None
    ) -> s.TurnSummary:
        last = await self._store.last_event_of_turn(session_id, rec.turn_id)
        return turn_summary(
            rec,
            accepted=await self._event(session_id, rec.first_seq),
            finished=t.TurnEvent.FromString(last.data) if last is not None else None,
            usage=usage,
        )

    async def _event(self, session_id: str, seq: int) -> t.TurnEvent | None:
        if seq <= 0:
            return None
        rows = await self._store.read_events(session_id, after_seq=seq - 1, limit=1)
        return t.TurnEvent.FromString(rows[0].data) if rows and rows[0].seq == seq else None

    def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        return self._run_turn(req, ctx)

    def accept_plan(self, req: s.AcceptPlanRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        check.require(req.plan_id, "plan_id")
        run = s.RunTurnRequest(
            session_id=req.session_id,
            turn=t.Turn(text=req.text, accepted=True),
            turn_id=req.turn_id,
        )
        return self._run_turn(run, ctx, plan_id=req.plan_id)

    async def reject_plan(self, req: s.RejectPlanRequest, ctx: CallContext) -> s.RejectPlanResponse:
        check.require(req.plan_id, "plan_id")
        check.check_feedback(req)
        async with self._locks(req.session_id):
            session = await self.session_record(req.session_id, ctx)
            open_plan(session.plan, req.plan_id)
            change = SessionChange(
                update_time=time.time(),
                plan=rejection(req.plan_id, req.feedback),
                expect_state=s.SESSION_STATE_IDLE,
            )
            if not await self._store.update_session(session.id, change):
                raise no_plan(req.plan_id)  # a turn started meanwhile: it superseded the plan
            decision = t.PlanDecision(
                plan_id=req.plan_id, approved=False, feedback=req.feedback, decided_by=ctx.caller
            )
            await self._log.commit(session.id, "", t.TurnEvent(plan_decision=decision))
        return s.RejectPlanResponse()

    async def _run_turn(
        self, req: s.RunTurnRequest, ctx: CallContext, *, plan_id: str = ""
    ) -> AsyncIterator[t.TurnEvent]:
        """RunTurn; with `plan_id`, the turn that carries out that proposed plan."""
        check.require(req.session_id, "session_id")
        check.check_turn(req, bypass_allowed=self._bypass_allowed)
        # Subscribed before the turn's first event can be stored: a turn started here is
        # streamed from what the log pushes, with no read of the store. Closed with the
        # stream, not when collected, in every case.
        live = self._log.subscribe(req.session_id)
        try:
            with ExitStack() as admission:
                # Until its `accepted` is handed over, the turn goes before agent work.
                admission.enter_context(self._interactions.under_way())
                rec, session, interrupting, started = await self._admit(req, ctx, plan_id=plan_id)
                if interrupting:
                    # Queued first; the turn it interrupts ends, and its end starts this one.
                    await self._turns.cancel_turn(
                        session, interrupting, interrupted_by(rec.turn_id)
                    )
                    await self._turns.start_next(session.id)
                if started and session.id == live.session_id:
                    events = self._log.follow(live, after_seq=rec.first_seq - 1)
                else:  # queued, or found by its turn_id: what is stored comes first
                    live.close()
                    events = self._log.read(session.id, after_seq=rec.first_seq - 1, follow=True)
                async with aclosing(events):
                    async for event in events:
                        if event.turn_id == rec.turn_id:
                            admission.close()  # admitted
                            yield event
                            if event.HasField("finished"):
                                return
        finally:
            live.close()

    async def start_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> str:
        """Start a turn and leave it running, for the caller to follow (ExportChanges'
        push, a schedule's firing): its id. While the session has a turn, as `req.busy`
        says: SESSION_BUSY, queued, or the turn interrupted."""
        check.require(req.session_id, "session_id")
        check.check_turn(req, bypass_allowed=self._bypass_allowed)
        with self._interactions.under_way():
            rec, session, interrupting, _ = await self._admit(req, ctx, plan_id="")
            if interrupting:
                await self._turns.cancel_turn(session, interrupting, interrupted_by(rec.turn_id))
                await self._turns.start_next(session.id)
        return rec.turn_id

    async def _admit(
        self, req: s.RunTurnRequest, ctx: CallContext, *, plan_id: str
    ) -> tuple[TurnRecord, SessionRecord, str, bool]:
        """The turn of a RunTurn call, started, or queued behind the session's turn (or
        found, when its turn_id ran before); the turn it interrupts, if it does; and
        whether it was started here (its every event still to come)."""
        interrupting = ""
        async with self._locks(req.session_id):
            session = await self.session_record(req.session_id, ctx)
            rec = None
            if req.turn_id:
                rec = await self._store.get_turn(session.id, req.turn_id)
                if rec is not None and rec.turn != req.turn.SerializeToString():
                    raise BlitzError(
                        Reason.TURN_ID_REUSED,
                        "turn_id was already used for a different turn",
                        {"turn_id": req.turn_id},
                    )
            if rec is None:
                if session.state == s.SESSION_STATE_CLOSED:
                    raise BlitzError(
                        Reason.SESSION_CLOSED, "the session is closed", {"session_id": session.id}
                    )
                busy = bool(session.turn_id) and not req.turn.aside
                if busy and (plan_id or req.busy not in _QUEUEING):
                    raise BlitzError(
                        Reason.SESSION_BUSY,
                        "a turn is already running in this session",
                        {"turn_id": session.turn_id},
                    )
                if plan_id:
                    open_plan(session.plan, plan_id)
                if busy:
                    front = req.busy == s.BUSY_STRATEGY_INTERRUPT
                    rec = await self._turns.enqueue(
                        session, req.turn, req.turn_id or new_turn_id(), front=front
                    )
                    interrupting = session.turn_id if front else ""
                    # Its turn may have ended as this one was queued: look once more.
                    if not interrupting:
                        self._turns.start_soon(session.id)
                    return rec, session, interrupting, False
                rec = await self._turns.start(
                    session,
                    req.turn,
                    req.turn_id or new_turn_id(),
                    prompt="" if req.turn.command else turn_prompt(session.plan, req.turn),
                    images=await turn_images(self._store, session.id, req.turn),
                )
                await self._title_from(session, req.turn)
                if req.turn.accepted and not plan_id:
                    # Accepted by the Turn's own flag: told as AcceptPlan tells it.
                    accepted = read_plan(session.plan)
                    plan_id = accepted.plan_id if accepted is not None else ""
                if plan_id:
                    decision = t.PlanDecision(plan_id=plan_id, approved=True, decided_by=ctx.caller)
                    await self._log.commit(
                        session.id, rec.turn_id, t.TurnEvent(plan_decision=decision)
                    )
                return rec, session, interrupting, True
        return rec, session, interrupting, False

    async def _title_from(self, session: SessionRecord, turn: t.Turn) -> None:
        """An untitled session is titled from its first prompt (`prompt.title_of`)."""
        title = "" if session.title else title_of(turn)
        if title:
            change = SessionChange(update_time=time.time(), title=title)
            await self._store.update_session(session.id, change)
            self._feed.changed(session.id)

    async def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        if req.after_seq < 0:
            raise invalid_argument("after_seq", "after_seq must not be negative")
        session = await self.session_record(req.session_id, ctx)
        if req.after_seq > session.last_seq:
            # Waiting for it would look like a session where nothing happens, for ever.
            raise invalid_argument(
                "after_seq",
                f"after_seq {req.after_seq} is past the session's last event ({session.last_seq})",
                last_seq=str(session.last_seq),
            )
        # A closed session has nothing more to say: its Watch ends once the replay has,
        # and a live one ends with the `session_state` CLOSED event.
        follow = req.follow and session.state != s.SESSION_STATE_CLOSED
        events = self._log.read(session.id, after_seq=req.after_seq, follow=follow)
        async with aclosing(events):
            async for event in events:
                yield event
                if _closes(event):
                    return

    # Running turns

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        if req.turn_id:
            check.require(req.turn_id, "turn_id")
        session = await self.session_record(req.session_id, ctx)
        turn_id = req.turn_id or session.turn_id
        reason = BlitzError(Reason.CANCELLED, "the turn was cancelled")
        if req.turn_id and await self._turns.end_queued(session.id, req.turn_id, reason):
            return s.CancelResponse(turn_id=turn_id)
        if not turn_id or not await self._turns.cancel_turn(session, turn_id, reason):
            raise _no_running_turn(session.id, req.turn_id)
        return s.CancelResponse(turn_id=turn_id)

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        check.check_steer(req)
        session = await self.session_record(req.session_id, ctx)
        turn_id = session.turn_id
        if req.expected_turn_id and req.expected_turn_id != turn_id:
            raise BlitzError(
                Reason.TURN_MISMATCH,
                f"the session's turn is {turn_id or 'none'}, not {req.expected_turn_id}",
                {"expected_turn_id": req.expected_turn_id, "turn_id": turn_id},
            )
        # Queued in the store, where the turn's holder takes it from, whoever that is.
        if not turn_id or not await self._store.add_steer(session.id, turn_id, req.text):
            raise _no_running_turn(session.id, "")
        self._turns.steered(session.id, turn_id)
        return s.SteerResponse(turn_id=turn_id)

    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport:
        session = await self.session_record(req.session_id, ctx)
        rows = await self._store.ledger(session.id)
        # The newest entries that fit one answer; `total` counts them all (`calls`).
        entries: list[s.LedgerEntry] = []
        used = 0
        for row in reversed(rows):
            entry = ledger_entry(row)
            used += entry.ByteSize() + 4
            if used > ANSWER_BUDGET:
                break
            entries.append(entry)
        entries.reverse()
        return s.UsageReport(total=await session_usage(self._store, session.id), entries=entries)


# The strategies that take a turn into a busy session rather than refuse it.
_QUEUEING = frozenset({s.BUSY_STRATEGY_ENQUEUE, s.BUSY_STRATEGY_INTERRUPT})


def _closes(event: t.TurnEvent) -> bool:
    return (
        event.HasField("session_state")
        and event.session_state.state == t.SessionStateChange.STATE_CLOSED
    )


def _no_running_turn(session_id: str, turn_id: str) -> BlitzError:
    return BlitzError(
        Reason.NO_RUNNING_TURN,
        "no turn is running in this session" + (f" as {turn_id!r}" if turn_id else ""),
        {"session_id": session_id, **({"turn_id": turn_id} if turn_id else {})},
    )
