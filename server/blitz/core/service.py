"""SessionService, transport-free: the session port (`blitz.ports.SessionPort`) implemented.

Each call checks its request (`validation.py`), finds the caller's session, acts through
the turn driver, the pending requests and the store, and answers with the views of
`views.py`. Streams read the event log. It never sees a wire; every failure a client should
see is a `BlitzError` from the catalog in `blitz.errors`.

No answer may outgrow a stock gRPC client (4 MiB): a page of ListSessions ends early once
its views fill `ANSWER_BUDGET` (its token then leads on from there), GetUsage lists the
newest ledger entries that fit it, and a session holds at most `RULES_MAX` rules, so
ListRules stays small too.
"""

from __future__ import annotations

import importlib.metadata
import os
import socket
import threading
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    MutableSequence,
    Sequence,
)
from contextlib import AsyncExitStack, ExitStack, aclosing
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import structlog

from blitz import metrics
from blitz.core import validation as check
from blitz.core.approvals import Outcome, rule_label
from blitz.core.deadlines import Deadlines
from blitz.core.event_log import EventLog
from blitz.core.leases import Leases
from blitz.core.locks import SessionLocks
from blitz.core.pending import PendingRequests
from blitz.core.plans import read_plan, rejection
from blitz.core.prompt import model_prompt
from blitz.core.recovery import Recovery
from blitz.core.session_folders import copy_workspace, is_own_folder, remove_workspace
from blitz.core.supervisor import Supervisor
from blitz.core.turns import FORKABLE_TURNS, Turns, interrupted, new_turn_id
from blitz.core.views import (
    ledger_entry,
    rule_view,
    session_usage,
    session_view,
    turn_summary,
    turn_usage,
)
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace
from blitz.ports import AgentPort, CallContext, ImageInput
from blitz.size_limits import ANSWER_BUDGET, EVENT_MAX
from blitz.store import (
    PendingRecord,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    Store,
    TurnPage,
    TurnRecord,
    TurnState,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["PROTOCOL_REVISION", "RULES_MAX", "ServerFacts", "SessionCore"]

log = structlog.get_logger(__name__)

# A stored record and the message that shows it, for a page of either (_fill_page).
_Rec = TypeVar("_Rec", SessionRecord, TurnRecord)
_View = TypeVar("_View", s.Session, s.TurnSummary)

try:
    _SERVER_VERSION = importlib.metadata.version("blitz-server")
except importlib.metadata.PackageNotFoundError:  # running from a checkout, not installed
    _SERVER_VERSION = "unknown"

# The most rules that may apply to one session (its own and its caller's ALWAYS rules).
RULES_MAX = 200


# The revision of blitz.v1 this server speaks (ServerInfo.protocol_revision): 1 was the
# first release; docs/protocol.md ("The server") lists what each later one added.
PROTOCOL_REVISION = 2


@dataclass(frozen=True)
class ServerFacts:
    """What GetServerInfo says that only the assembled server knows (server.py)."""

    models: tuple[str, ...] = ("demo",)
    limits: Mapping[str, int] = field(default_factory=dict)
    features: tuple[str, ...] = ()


class SessionCore:
    """Every SessionService call, taking and returning protobuf messages.

    Use as `async with SessionCore(...) as core:`; entering settles what a dead process
    left (recovery), leaving drains running turns. Methods raise `BlitzError`; streams may
    raise it mid-way too.
    """

    def __init__(
        self,
        *,
        store: Store,
        agent: AgentPort,
        workspace_root: Path,
        default_model: str = "demo",
        default_max_turns: int = 50,
        default_timeout: timedelta | None = None,
        approval_timeout: timedelta | None = None,
        drain_timeout: float = 10.0,
        max_running_turns: int = 256,
        turn_lease: float = 6.0,
        replica: str = "",
        facts: ServerFacts | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        """`tracer` traces each run of a turn (see turns.py); None: no spans. `replica`
        names this process as the holder of its turns (made up when empty: host, pid and a
        random part, so a restarted process is another holder)."""
        self._store = store
        self._agent = agent
        self._workspace_root = Path(workspace_root)
        self._default_model = default_model
        self._facts = facts or ServerFacts()
        self._drain_timeout = drain_timeout
        self._locks = SessionLocks()
        self._log = EventLog(store)
        self._timers = Supervisor("deadlines")
        self._pending = PendingRequests(
            store=store,
            log=self._log,
            locks=self._locks,
            deadlines=Deadlines(self._timers),
            approval_timeout=approval_timeout,
        )
        self._turns = Turns(
            store=store,
            log=self._log,
            agent=agent,
            locks=self._locks,
            pending=self._pending,
            workspace_root=self._workspace_root,
            default_max_turns=default_max_turns,
            default_timeout=default_timeout,
            owner=replica or f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}",
            lease=turn_lease,
            max_running=max_running_turns,
            tracer=tracer,
        )
        self._recovery = Recovery(
            store=store, log=self._log, turns=self._turns, pending=self._pending
        )
        self._leases = AsyncExitStack()
        self._uncount = lambda: None

    async def __aenter__(self) -> SessionCore:
        self._workspace_root.mkdir(parents=True, exist_ok=True)
        await self._log.__aenter__()
        self._uncount = metrics.count_live(self._live_counts)
        try:
            await self._recovery.at_start()
            if self._store.shared:
                await self._leases.enter_async_context(
                    Leases(store=self._store, turns=self._turns, recovery=self._recovery)
                )
        except BaseException:
            self._uncount()
            await self._timers.aclose()
            await self._log.__aexit__(None, None, None)
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
            await self._timers.aclose()
        finally:
            self._uncount()
            await self._log.__aexit__(exc_type, exc, tb)

    def _live_counts(self) -> metrics.LiveCounts:
        live = self._turns.live
        return metrics.LiveCounts(
            turns_running=live.count(TurnState.RUNNING),
            turns_parked=live.count(TurnState.PARKED),
            watchers=self._log.watchers,
        )

    @property
    def workspace_root(self) -> Path:
        return self._workspace_root

    @property
    def store(self) -> Store:
        return self._store

    # Sessions

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        """The caller's session, or SESSION_NOT_FOUND (for the workspace service too)."""
        check.require(session_id, "session_id")
        rec = await self._store.get_session(session_id)
        # Another principal's session is not found: its existence is not revealed.
        if rec is None or (rec.owner != ctx.caller and not ctx.admin):
            raise BlitzError(
                Reason.SESSION_NOT_FOUND, f"no session {session_id!r}", {"session_id": session_id}
            )
        return rec

    async def _view(self, rec: SessionRecord) -> s.Session:
        return session_view(
            rec,
            usage=await session_usage(self._store, rec.id),
            pending=await self._store.list_pending(rec.id),
        )

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        approval_timeout = check.session_settings(req)
        model = req.model or self._default_model
        self._agent.validate_model(model)
        session_id = "s_" + uuid.uuid4().hex
        workspace = check.workspace_name(
            req.workspace, session_id=session_id, root=self._workspace_root
        )
        try:
            # Made folder by folder, none through a link: a link another session left
            # cannot widen this one's workspace to wherever it leads.
            await FILE_CALLS.run(Workspace.named, self._workspace_root, workspace, create=True)
        except PathRefused as exc:
            raise invalid_argument("workspace", str(exc)) from None
        except NotADirectoryError:
            raise invalid_argument(
                "workspace", f"workspace {workspace!r} passes through a file, not a folder"
            ) from None
        except CallTimedOut:
            raise BlitzError(
                Reason.INTERNAL, "the workspace's folder could not be made in time"
            ) from None
        now = time.time()
        rec = SessionRecord(
            id=session_id,
            owner=ctx.caller,
            title=req.title,
            workspace=workspace,
            model=model,
            labels=dict(req.labels),
            state=s.SESSION_STATE_IDLE,
            create_time=now,
            update_time=now,
            approval_timeout=approval_timeout,
        )
        await self._store.create_session(rec)
        return await self._view(rec)

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        check.require(req.session_id, "session_id")
        # Under the lock: a turn parking or finishing is seen before or after, not halfway.
        async with self._locks(req.session_id):
            return await self._view(await self.session_record(req.session_id, ctx))

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        size, before = check.session_page(req)
        recs = await self._store.list_sessions(
            SessionQuery(
                owner=None if ctx.admin else ctx.caller,
                state=req.state,
                labels=dict(req.labels),
                limit=size + 1,
                before=before,
            )
        )
        resp = s.ListSessionsResponse()
        resp.next_page_token = await _fill_page(recs, size, self._view, resp.sessions)
        return resp

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        rec = await self.session_record(req.session_id, ctx)
        if rec.state != s.SESSION_STATE_CLOSED:
            async with self._locks(rec.id):
                await self._store.update_session(
                    rec.id, SessionChange(update_time=time.time(), state=s.SESSION_STATE_CLOSED)
                )
                rec = await self.session_record(req.session_id, ctx)
            # Its main turn and its asides, wherever they run.
            unfinished = await self._store.turns_in_state(TurnState.RUNNING, session_id=rec.id)
            turn_ids = {rec.turn_id} if rec.turn_id else set()
            turn_ids |= {turn.turn_id for turn in unfinished}
            for turn_id in sorted(turn_ids):
                await self._turns.cancel_turn(
                    rec, turn_id, BlitzError(Reason.CANCELLED, "the session was closed")
                )
            # After its turns' `finished`: a following Watch ends with this event.
            closed = t.SessionStateChange(state=t.SessionStateChange.STATE_CLOSED, reason="closed")
            await self._log.commit(rec.id, "", t.TurnEvent(session_state=closed))
        return await self._view(await self.session_record(req.session_id, ctx))

    async def update_session(self, req: s.UpdateSessionRequest, ctx: CallContext) -> s.Session:
        change = check.session_update(req, now=time.time())
        async with self._locks(req.session_id):
            rec = await self.session_record(req.session_id, ctx)
            await self._store.update_session(rec.id, change)
            return await self._view(await self.session_record(rec.id, ctx))

    async def delete_session(
        self, req: s.DeleteSessionRequest, ctx: CallContext
    ) -> s.DeleteSessionResponse:
        """Close the session if it is idle, then delete it; SESSION_BUSY while a turn runs
        or is parked (the main turn or an aside)."""
        check.require(req.session_id, "session_id")
        async with self._locks(req.session_id):
            rec = await self.session_record(req.session_id, ctx)
            running = await self._store.turns_in_state(TurnState.RUNNING, session_id=rec.id)
            busy = rec.turn_id or (running[0].turn_id if running else "")
            # Closed first, if idle, in one step: no turn can start in it from here on.
            closing = SessionChange(
                update_time=time.time(),
                state=s.SESSION_STATE_CLOSED,
                expect_state=s.SESSION_STATE_IDLE,
            )
            if not busy and rec.state != s.SESSION_STATE_CLOSED:
                if not await self._store.update_session(rec.id, closing):
                    busy = (await self.session_record(rec.id, ctx)).turn_id or "?"
                else:
                    # Its watchers end cleanly, as on CloseSession, before the log goes.
                    closed = t.SessionStateChange(
                        state=t.SessionStateChange.STATE_CLOSED, reason="deleted"
                    )
                    await self._log.commit(rec.id, "", t.TurnEvent(session_state=closed))
            if busy:
                raise BlitzError(
                    Reason.SESSION_BUSY,
                    "a turn is running or parked in this session: cancel it or close the "
                    "session first",
                    {"turn_id": busy},
                )
            await self._store.delete_session(rec.id)
        removed = False
        if is_own_folder(rec.workspace, rec.id):
            try:
                removed = await FILE_CALLS.run(
                    remove_workspace, self._workspace_root, rec.workspace
                )
            except (OSError, PathRefused, CallTimedOut) as exc:
                # The records are gone: the folder is only left behind, and said so.
                log.warning("workspace_not_removed", session_id=rec.id, error=str(exc))
        return s.DeleteSessionResponse(workspace_deleted=removed)

    async def fork_session(self, req: s.ForkSessionRequest, ctx: CallContext) -> s.Session:
        """A new session with the history the turn left and a copy of the workspace now."""
        check.check_fork(req)
        source = await self.session_record(req.session_id, ctx)
        turn = await self._store.get_turn(source.id, req.turn_id)
        if turn is None:
            raise BlitzError(
                Reason.TURN_NOT_FOUND,
                f"no turn {req.turn_id!r} in this session",
                {"turn_id": req.turn_id},
            )
        if t.Turn.FromString(turn.turn).aside:
            raise invalid_argument(
                "turn_id", "an aside is not recorded into the history: fork at another turn"
            )
        if turn.state != TurnState.FINISHED:
            raise invalid_argument("turn_id", "the turn has not finished: fork at a finished one")
        history = await self._store.get_turn_history(source.id, turn.turn_id)
        if history is None:
            raise invalid_argument(
                "turn_id",
                f"no history is kept for this turn: a session can be forked at its last "
                f"{FORKABLE_TURNS} finished turns",
                limit=str(FORKABLE_TURNS),
            )
        fork_id = "s_" + uuid.uuid4().hex
        abandoned = threading.Event()
        try:
            await FILE_CALLS.run(
                copy_workspace, self._workspace_root, source.workspace, fork_id, abandoned
            )
        except CallTimedOut:
            abandoned.set()  # the copy stops at its next folder and removes what it made
            raise BlitzError(Reason.INTERNAL, "the workspace could not be copied in time") from None
        except (OSError, PathRefused) as exc:
            log.warning("workspace_not_copied", session_id=source.id, error=str(exc))
            raise BlitzError(
                Reason.FILE_NOT_FOUND,
                "the session's workspace could not be copied",
                {"path": source.workspace},
            ) from None
        now = time.time()
        rec = SessionRecord(
            id=fork_id,
            owner=source.owner,
            title=req.title or f"fork of {source.title or source.id}"[:500],
            workspace=fork_id,
            model=source.model,
            labels=dict(source.labels),
            state=s.SESSION_STATE_IDLE,
            create_time=now,
            update_time=now,
            approval_timeout=source.approval_timeout,
        )
        await self._store.create_session(rec)
        if history:
            await self._store.set_history(fork_id, history)
        return await self._view(rec)

    async def get_server_info(self, req: s.GetServerInfoRequest, ctx: CallContext) -> s.ServerInfo:
        """What this server is and speaks; the same for every caller."""
        facts = self._facts
        features = {*facts.features, *(("replicas",) if self._store.shared else ())}
        return s.ServerInfo(
            protocol="blitz.v1",
            protocol_revision=PROTOCOL_REVISION,
            server_version=_SERVER_VERSION,
            default_model=self._default_model,
            models=facts.models,
            limits={**check.CLIENT_LIMITS, "event_bytes": EVENT_MAX, **facts.limits},
            features=sorted(features),
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
            last = await self._store.last_event_of_turn(session.id, rec.turn_id)
            return turn_summary(
                rec,
                accepted=await self._event(session.id, rec.first_seq),
                finished=t.TurnEvent.FromString(last.data) if last is not None else None,
                usage=usage.get(rec.turn_id),
            )

        resp = s.ListTurnsResponse()
        resp.next_page_token = await _fill_page(recs, size, summary, resp.turns)
        return resp

    async def _event(self, session_id: str, seq: int) -> t.TurnEvent | None:
        if seq <= 0:
            return None
        rows = await self._store.read_events(session_id, after_seq=seq - 1, limit=1)
        return t.TurnEvent.FromString(rows[0].data) if rows and rows[0].seq == seq else None

    async def _prompt(self, session: SessionRecord, turn: t.Turn) -> str:
        """The model's prompt: the turn's, after the accepted plan, or after the feedback
        on the rejected one."""
        prompt = model_prompt(turn)
        plan = read_plan(session.plan)
        if not turn.accepted:
            if plan is not None and plan.rejected:
                return plan.rejected_prompt() + (f"\n\n{prompt}" if prompt else "")
            return prompt
        if plan is None or not plan.open:
            raise BlitzError(
                Reason.NO_PENDING_PLAN,
                "there is no proposed plan to accept",
                {"field": "turn.accepted"},
            )
        return plan.accepted_prompt() + (f"\n\n{prompt}" if prompt else "")

    async def _images(self, session: SessionRecord, turn: t.Turn) -> tuple[ImageInput, ...]:
        images = []
        for image_id in turn.image_ids:
            image = await self._store.get_image(session.id, image_id)
            if image is None:
                raise invalid_argument(
                    "turn.image_ids", f"no image {image_id!r} in this session", image_id=image_id
                )
            images.append(ImageInput(data=image.data, media_type=image.media_type))
        return tuple(images)

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
            _open_plan(session, req.plan_id)
            change = SessionChange(
                update_time=time.time(),
                plan=rejection(req.plan_id, req.feedback),
                expect_state=s.SESSION_STATE_IDLE,
            )
            if not await self._store.update_session(session.id, change):
                raise _no_plan(req.plan_id)  # a turn started meanwhile: it superseded the plan
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
        check.check_turn(req)
        with ExitStack() as admission:
            # Until its `accepted` is handed over, the turn goes before agent work.
            admission.enter_context(self._turns.admissions.admitting())
            rec, session = await self._admit(req, ctx, plan_id=plan_id)
            # Closed here, not when collected: its live subscription ends with the stream.
            events = self._log.read(session.id, after_seq=rec.first_seq - 1, follow=True)
            async with aclosing(events):
                async for event in events:
                    if event.turn_id == rec.turn_id:
                        admission.close()  # admitted
                        yield event
                        if event.HasField("finished"):
                            return

    async def _admit(
        self, req: s.RunTurnRequest, ctx: CallContext, *, plan_id: str
    ) -> tuple[TurnRecord, SessionRecord]:
        """The turn of a RunTurn call, started (or found, when its turn_id ran before)."""
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
                if session.turn_id and not req.turn.aside:
                    raise BlitzError(
                        Reason.SESSION_BUSY,
                        "a turn is already running in this session",
                        {"turn_id": session.turn_id},
                    )
                if plan_id:
                    _open_plan(session, plan_id)
                rec = await self._turns.start(
                    session,
                    req.turn,
                    req.turn_id or new_turn_id(),
                    prompt="" if req.turn.command else await self._prompt(session, req.turn),
                    images=await self._images(session, req.turn),
                )
                if plan_id:
                    decision = t.PlanDecision(plan_id=plan_id, approved=True, decided_by=ctx.caller)
                    await self._log.commit(
                        session.id, rec.turn_id, t.TurnEvent(plan_decision=decision)
                    )
        return rec, session

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

    # Requests

    async def _open_request(
        self, session_id: str, request_id: str
    ) -> tuple[PendingRecord, t.TurnEvent]:
        check.require(request_id, "request_id")
        found = await self._store.list_pending(session_id, request_id=request_id, open_only=False)
        if not found:
            raise BlitzError(
                Reason.REQUEST_NOT_FOUND,
                f"no request {request_id!r} in this session",
                {"request_id": request_id},
            )
        if found[0].resolution is not None:
            raise _already_resolved(request_id)
        return found[0], t.TurnEvent.FromString(found[0].event)

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse:
        check.check_decision(req)
        session = await self.session_record(req.session_id, ctx)
        pending, event = await self._open_request(session.id, req.request_id)
        check.check_decision(req, event)
        approval = event.approval_request
        rule = None
        if req.decision in (t.DECISION_SESSION, t.DECISION_ALWAYS):
            if len(await self._pending.rules_of(session)) >= RULES_MAX:
                raise invalid_argument(
                    "decision",
                    f"{RULES_MAX} rules already apply to this session: revoke some "
                    "(RevokeRule) or approve ONCE",
                    limit=str(RULES_MAX),
                )
            always = req.decision == t.DECISION_ALWAYS
            rule = RuleRecord(
                id="r_" + uuid.uuid4().hex,
                scope=s.RULE_SCOPE_ALWAYS if always else s.RULE_SCOPE_SESSION,
                kind=approval.kind,
                scope_label=rule_label(approval, req.command),
                session_id=session.id,
                workspace=session.workspace,
                caller=session.owner,
                create_time=time.time(),
                request_id=approval.request_id,
            )
        outcome = Outcome.approval(
            req.request_id,
            req.decision,
            reason=req.reason,
            command=req.command,
            by=ctx.caller,
            interrupt=req.interrupt,
        )
        if not await self._pending.resolve(pending, outcome, rule=rule):
            raise _already_resolved(req.request_id)
        if req.interrupt and await self._store.list_pending(session.id, turn_id=pending.turn_id):
            # Others are still open: the turn ends here, and they are withdrawn. (Its last
            # open request: the turn ends instead of resuming, in Turns.answered.)
            await self._turns.cancel_turn(session, pending.turn_id, interrupted())
        return s.DecideResponse()

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        check.check_answers(req)
        session = await self.session_record(req.session_id, ctx)
        pending, event = await self._open_request(session.id, req.request_id)
        check.check_answers(req, event)
        outcome = Outcome.answer(req.request_id, tuple(req.answers), by=ctx.caller)
        if not await self._pending.resolve(pending, outcome):
            raise _already_resolved(req.request_id)
        return s.AnswerResponse()

    async def list_rules(self, req: s.ListRulesRequest, ctx: CallContext) -> s.ListRulesResponse:
        session = await self.session_record(req.session_id, ctx)
        return s.ListRulesResponse(
            rules=[rule_view(r) for r in await self._pending.rules_of(session)]
        )

    async def revoke_rule(self, req: s.RevokeRuleRequest, ctx: CallContext) -> s.RevokeRuleResponse:
        session = await self.session_record(req.session_id, ctx)
        check.require(req.rule_id, "rule_id")
        rules = {r.id for r in await self._pending.rules_of(session)}
        if req.rule_id not in rules or not await self._store.delete_rule(req.rule_id):
            raise BlitzError(
                Reason.RULE_NOT_FOUND,
                f"no rule {req.rule_id!r} applies to this session",
                {"rule_id": req.rule_id},
            )
        return s.RevokeRuleResponse()

    # Running turns

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        if req.turn_id:
            check.require(req.turn_id, "turn_id")
        session = await self.session_record(req.session_id, ctx)
        turn_id = req.turn_id or session.turn_id
        reason = BlitzError(Reason.CANCELLED, "the turn was cancelled")
        if not turn_id or not await self._turns.cancel_turn(session, turn_id, reason):
            raise _no_running_turn(session.id, req.turn_id)
        return s.CancelResponse(turn_id=turn_id)

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        check.check_steer(req.text)
        session = await self.session_record(req.session_id, ctx)
        turn_id = session.turn_id
        # Queued in the store, where the turn's holder takes it from, whoever that is.
        if not turn_id or not await self._store.add_steer(session.id, turn_id, req.text):
            raise _no_running_turn(session.id, "")
        held = self._turns.live.held(session.id, turn_id)
        if held is not None:
            held.steer_waiting = True
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


async def _fill_page(
    recs: Sequence[_Rec],
    size: int,
    view: Callable[[_Rec], Awaitable[_View]],
    page: MutableSequence[_View],
) -> str:
    """Add the views of the first `size` records to `page` while they fit one answer
    (ANSWER_BUDGET; always at least one); the next page's token, "" when none is left."""
    used = 0
    for rec in recs[:size]:
        shown = await view(rec)
        used += shown.ByteSize() + 8  # the field's tag and length
        if page and used > ANSWER_BUDGET:
            break  # the page is full: the next one starts at this record
        page.append(shown)
    return check.page_token(recs[len(page) - 1]) if len(recs) > len(page) else ""


def _no_plan(plan_id: str) -> BlitzError:
    return BlitzError(
        Reason.NO_PENDING_PLAN,
        "that plan is not the session's open proposal (a later turn superseded it, or it "
        "was decided)",
        {"plan_id": plan_id},
    )


def _open_plan(session: SessionRecord, plan_id: str) -> None:
    """NO_PENDING_PLAN unless `plan_id` is the session's open proposal."""
    plan = read_plan(session.plan)
    if plan is None or not plan.open or plan.plan_id != plan_id:
        raise _no_plan(plan_id)


def _already_resolved(request_id: str) -> BlitzError:
    return BlitzError(
        Reason.ALREADY_RESOLVED, "that request was already resolved", {"request_id": request_id}
    )
