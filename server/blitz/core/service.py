"""SessionService, transport-free: validation, sessions, and the calls on turns.

Takes and returns protobuf messages and a `CallContext`; never sees a wire. Every failure a
client should see is a `BlitzError` from the catalog in blitz.errors.
"""

from __future__ import annotations

import base64
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from datetime import timedelta
from pathlib import Path, PurePosixPath
from types import TracebackType

from google.protobuf.timestamp_pb2 import Timestamp

from blitz.core.approvals import Outcome, rule_label
from blitz.core.coalesce import coalesce
from blitz.core.event_log import EventLog
from blitz.core.prompt import model_prompt
from blitz.core.slash_commands import parse_command, plan_text
from blitz.core.turns import ActiveTurn, TurnRunner, new_turn_id
from blitz.core.usage import ledger_entry, session_usage
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.paths import too_long
from blitz.ports.agent import AgentPort, ImageInput
from blitz.ports.session import CallContext
from blitz.store import PendingRecord, RuleRecord, SessionRecord, Store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["SessionCore"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_LABEL_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")
_REPLAY_PAGE = 1000
_MAX_PAGE = 500


def _stamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def _check_label_keys(labels: Iterable[str]) -> None:
    for key in labels:
        if not _LABEL_KEY.match(key):
            raise invalid_argument(
                "labels", "label keys are 1-63 letters, digits or ._/- starting alphanumeric"
            )


def _require(value: str, field: str) -> str:
    if not value:
        raise invalid_argument(field, f"{field} is required")
    return value


class SessionCore:
    """Every SessionService call, taking and returning protobuf messages.

    Use as `async with SessionCore(...) as core:`; leaving the block drains running turns.
    Methods raise `blitz.errors.BlitzError`; streams may raise it mid-way too.
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
    ) -> None:
        self._store = store
        self._agent = agent
        self._workspace_root = Path(workspace_root)
        self._default_model = default_model
        self._drain_timeout = drain_timeout
        self._log = EventLog(store)
        self._turns = TurnRunner(
            store=store,
            log=self._log,
            agent=agent,
            workspace_root=self._workspace_root,
            default_max_turns=default_max_turns,
            default_timeout=default_timeout,
            approval_timeout=approval_timeout,
        )

    async def __aenter__(self) -> SessionCore:
        self._workspace_root.mkdir(parents=True, exist_ok=True)
        await self._log.__aenter__()
        try:
            await self._turns.recover()
        except BaseException:
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
        finally:
            await self._log.__aexit__(exc_type, exc, tb)

    @property
    def workspace_root(self) -> Path:
        return self._workspace_root

    @property
    def store(self) -> Store:
        return self._store

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        """The caller's session, or SESSION_NOT_FOUND (for sibling services)."""
        return await self._session(session_id, ctx)

    # Sessions

    async def _session(self, session_id: str, ctx: CallContext) -> SessionRecord:
        _require(session_id, "session_id")
        rec = await self._store.get_session(session_id)
        if rec is None or rec.owner != ctx.caller:
            raise BlitzError(
                Reason.SESSION_NOT_FOUND,
                f"no session {session_id!r}",
                {"session_id": session_id},
            )
        return rec

    async def _session_proto(self, rec: SessionRecord) -> s.Session:
        session = s.Session(
            id=rec.id,
            title=rec.title,
            workspace=rec.workspace,
            model=rec.model,
            labels=rec.labels,
            state=rec.state,  # type: ignore[arg-type]
            create_time=_stamp(rec.create_time),
            update_time=_stamp(rec.update_time),
            turn_id=rec.turn_id,
            last_seq=await self._store.last_seq(rec.id),
            usage=await session_usage(self._store, rec.id),
        )
        if rec.approval_timeout is not None:
            session.approval_timeout.FromTimedelta(timedelta(seconds=rec.approval_timeout))
        for p in await self._store.list_pending(rec.id):
            session.pending.append(t.TurnEvent.FromString(p.event))
        return session

    def _workspace(self, name: str, session_id: str) -> str:
        if not name:
            return session_id
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or "\\" in name or "\x00" in name:
            raise invalid_argument(
                "workspace", "workspace must be a relative folder name inside the server's root"
            )
        if too_long(str(self._workspace_root / path)):
            raise invalid_argument("workspace", "workspace is too long a folder name")
        return str(path)

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        if len(req.title) > 500:
            raise invalid_argument("title", "title is longer than 500 characters", limit="500")
        _check_label_keys(req.labels)
        approval_timeout = None
        if req.HasField("approval_timeout"):
            approval_timeout = req.approval_timeout.ToTimedelta().total_seconds()
            if approval_timeout <= 0:
                raise invalid_argument("approval_timeout", "approval_timeout must be positive")
        model = req.model or self._default_model
        self._agent.validate_model(model)
        session_id = "s_" + uuid.uuid4().hex
        workspace = self._workspace(req.workspace, session_id)
        (self._workspace_root / workspace).mkdir(parents=True, exist_ok=True)
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
        return await self._session_proto(rec)

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        _require(req.session_id, "session_id")
        # Under the lock: a turn parking or finishing is seen before or after, not halfway.
        async with self._turns.lock(req.session_id):
            return await self._session_proto(await self._session(req.session_id, ctx))

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        if req.page_size < 0:
            raise invalid_argument("page_size", "page_size must not be negative")
        if req.state not in s.SessionState.values():
            raise invalid_argument("state", f"state {req.state} is not a SessionState")
        _check_label_keys(req.labels)
        size = min(req.page_size or 50, _MAX_PAGE)
        before = None
        if req.page_token:
            try:
                raw = base64.urlsafe_b64decode(req.page_token.encode()).decode()
                when, _, last_id = raw.partition("|")
                before = (float(when), last_id)
            except ValueError:
                raise invalid_argument(
                    "page_token", "page_token is not one this server gave"
                ) from None
        recs = await self._store.list_sessions(
            owner=ctx.caller,
            state=req.state,
            labels=dict(req.labels),
            limit=size + 1,
            before=before,
        )
        resp = s.ListSessionsResponse()
        for rec in recs[:size]:
            resp.sessions.append(await self._session_proto(rec))
        if len(recs) > size:
            last = recs[size - 1]
            token = f"{last.create_time!r}|{last.id}"
            resp.next_page_token = base64.urlsafe_b64encode(token.encode()).decode()
        return resp

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        rec = await self._session(req.session_id, ctx)
        if rec.state != s.SESSION_STATE_CLOSED:
            async with self._turns.lock(rec.id):
                rec = await self._session(req.session_id, ctx)
                await self._store.set_session_state(
                    rec.id, state=s.SESSION_STATE_CLOSED, turn_id=rec.turn_id, now=time.time()
                )
                active = await self._turns.active_turn(rec)
            closing = [active] if active is not None else []
            for turn in [*closing, *self._turns.asides_of(rec.id)]:
                await self._turns.cancel(
                    turn, BlitzError(Reason.CANCELLED, "the session was closed")
                )
        return await self._session_proto(await self._session(req.session_id, ctx))

    # Turns

    def _check_turn(self, req: s.RunTurnRequest) -> None:
        turn = req.turn
        if req.turn_id and not _ID.match(req.turn_id):
            raise invalid_argument(
                "turn_id", "turn_id must be 1-128 letters, digits or ._:- starting alphanumeric"
            )
        if not req.HasField("turn") or not (turn.text or turn.prompt or turn.accepted):
            raise invalid_argument("turn.text", "the turn needs text (or a prompt)")
        if turn.max_turns < 0:
            raise invalid_argument("turn.max_turns", "max_turns must not be negative")
        if turn.max_cost_usd < 0 or not math.isfinite(turn.max_cost_usd):
            raise invalid_argument("turn.max_cost_usd", "max_cost_usd must be a positive amount")
        if turn.HasField("timeout") and turn.timeout.ToTimedelta() <= timedelta(0):
            raise invalid_argument("turn.timeout", "timeout must be positive")
        if turn.command:
            parse_command(turn.text)  # unknown commands fail before the turn starts
        if turn.plan and turn.accepted:
            raise invalid_argument("turn.accepted", "a turn cannot both propose and accept a plan")
        if turn.aside and (turn.plan or turn.accepted):
            raise invalid_argument("turn.aside", "an aside turn neither proposes nor accepts plans")

    async def _prompt(self, session: SessionRecord, turn: t.Turn) -> str:
        """The model's prompt: the turn's, after the accepted plan when there is one."""
        prompt = model_prompt(turn)
        if not turn.accepted:
            return prompt
        plan = await self._store.get_plan(session.id)
        if plan is None:
            raise BlitzError(
                Reason.NO_PENDING_PLAN,
                "there is no proposed plan to accept",
                {"field": "turn.accepted"},
            )
        accepted = "The user accepted the plan you proposed. Carry it out now.\n\n"
        return accepted + plan_text(plan) + (f"\n\n{prompt}" if prompt else "")

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

    async def run_turn(self, req: s.RunTurnRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        _require(req.session_id, "session_id")
        self._check_turn(req)
        async with self._turns.lock(req.session_id):
            session = await self._session(req.session_id, ctx)
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
                rec = await self._turns.start(
                    session,
                    req.turn,
                    req.turn_id or new_turn_id(),
                    prompt="" if req.turn.command else await self._prompt(session, req.turn),
                    images=await self._images(session, req.turn),
                )
        async for event in self._follow(session.id, rec.first_seq - 1, turn_id=rec.turn_id):
            yield event

    async def _follow(
        self, session_id: str, after_seq: int, *, turn_id: str
    ) -> AsyncIterator[t.TurnEvent]:
        """One turn's events from the log, ending with its `finished`."""
        async for event in self._events(session_id, after_seq, follow=True):
            if event.turn_id == turn_id:
                yield event
                if event.HasField("finished"):
                    return

    async def _events(
        self, session_id: str, after_seq: int, *, follow: bool
    ) -> AsyncIterator[t.TurnEvent]:
        """Replay from the store after `after_seq`, then (with follow) the live feed.

        Subscribing before reading the store and skipping seqs already yielded is what
        makes the hand-over free of gaps and duplicates.
        """
        sub = self._log.subscribe(session_id) if follow else None
        try:
            last = after_seq
            while True:
                rows = await self._store.read_events(session_id, after_seq=last, limit=_REPLAY_PAGE)
                if not rows:
                    break
                events = [t.TurnEvent.FromString(row.data) for row in rows]
                for event in coalesce(events, owned=True):
                    yield event
                last = rows[-1].seq
            if sub is None:
                return
            async for batch in sub.batches(after_seq=last):
                for event in batch:
                    yield event
        finally:
            if sub is not None:
                sub.close()

    async def watch(self, req: s.WatchRequest, ctx: CallContext) -> AsyncIterator[t.TurnEvent]:
        if req.after_seq < 0:
            raise invalid_argument("after_seq", "after_seq must not be negative")
        session = await self._session(req.session_id, ctx)
        if req.after_seq and req.after_seq > (last := await self._store.last_seq(session.id)):
            # Waiting for it would look like a session where nothing happens, for ever.
            raise invalid_argument(
                "after_seq",
                f"after_seq {req.after_seq} is past the session's last event ({last})",
                last_seq=str(last),
            )
        async for event in self._events(session.id, req.after_seq, follow=req.follow):
            yield event

    async def _pending_request(
        self, session_id: str, request_id: str
    ) -> tuple[PendingRecord, t.TurnEvent]:
        _require(request_id, "request_id")
        pending = await self._store.get_pending(session_id, request_id)
        if pending is None:
            raise BlitzError(
                Reason.REQUEST_NOT_FOUND,
                f"no request {request_id!r} in this session",
                {"request_id": request_id},
            )
        if pending.resolution is not None:
            raise _already_resolved(request_id)
        return pending, t.TurnEvent.FromString(pending.event)

    async def decide(self, req: s.DecideRequest, ctx: CallContext) -> s.DecideResponse:
        if req.decision == t.DECISION_UNSPECIFIED or req.decision not in t.Decision.values():
            raise invalid_argument("decision", "decision must be DENY, ONCE, SESSION or ALWAYS")
        session = await self._session(req.session_id, ctx)
        pending, event = await self._pending_request(session.id, req.request_id)
        if not event.HasField("approval_request"):
            raise invalid_argument("request_id", "that request is a question: use Answer")
        approval = event.approval_request
        if req.command:
            if approval.kind != t.ACTION_KIND_COMMAND:
                raise invalid_argument("command", "only a COMMAND approval takes a command")
            if req.decision == t.DECISION_DENY:
                raise invalid_argument("command", "an edited command needs an approving decision")
        rule = None
        if req.decision in (t.DECISION_SESSION, t.DECISION_ALWAYS):
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
            req.request_id, req.decision, reason=req.reason, command=req.command, by=ctx.caller
        )
        if not await self._turns.resolve(pending, outcome, rule=rule):
            raise _already_resolved(req.request_id)
        return s.DecideResponse()

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        session = await self._session(req.session_id, ctx)
        pending, event = await self._pending_request(session.id, req.request_id)
        if not event.HasField("question"):
            raise invalid_argument("request_id", "that request is an approval: use Decide")
        question = event.question
        answers = list(req.answers)
        if not answers or any(not a for a in answers):
            raise invalid_argument("answers", "give at least one non-empty answer")
        if len(answers) > 1 and not question.multi_select:
            raise invalid_argument("answers", "this question takes one answer")
        if question.options:
            for answer in answers:
                if answer not in question.options:
                    raise invalid_argument(
                        "answers",
                        f"{answer!r} is not one of the options",
                        options="|".join(question.options),
                    )
        outcome = Outcome.answer(req.request_id, tuple(answers), by=ctx.caller)
        if not await self._turns.resolve(pending, outcome):
            raise _already_resolved(req.request_id)
        return s.AnswerResponse()

    async def list_rules(self, req: s.ListRulesRequest, ctx: CallContext) -> s.ListRulesResponse:
        session = await self._session(req.session_id, ctx)
        return s.ListRulesResponse(
            rules=[_rule_proto(r) for r in await self._turns.rules_of(session)]
        )

    async def revoke_rule(self, req: s.RevokeRuleRequest, ctx: CallContext) -> s.RevokeRuleResponse:
        session = await self._session(req.session_id, ctx)
        _require(req.rule_id, "rule_id")
        rules = {r.id for r in await self._turns.rules_of(session)}
        if req.rule_id not in rules or not await self._store.delete_rule(req.rule_id):
            raise BlitzError(
                Reason.RULE_NOT_FOUND,
                f"no rule {req.rule_id!r} applies to this session",
                {"rule_id": req.rule_id},
            )
        return s.RevokeRuleResponse()

    async def _active(self, session: SessionRecord, turn_id: str) -> ActiveTurn:
        active = self._turns.find(session.id, turn_id) if turn_id else None
        if active is not None:
            return active
        active = await self._turns.active_turn(session)
        if active is None or (turn_id and active.rec.turn_id != turn_id):
            raise BlitzError(
                Reason.NO_RUNNING_TURN,
                "no turn is running in this session" + (f" as {turn_id!r}" if turn_id else ""),
                {"session_id": session.id, **({"turn_id": turn_id} if turn_id else {})},
            )
        return active

    async def cancel(self, req: s.CancelRequest, ctx: CallContext) -> s.CancelResponse:
        session = await self._session(req.session_id, ctx)
        active = await self._active(session, req.turn_id)
        await self._turns.cancel(active, BlitzError(Reason.CANCELLED, "the turn was cancelled"))
        return s.CancelResponse(turn_id=active.rec.turn_id)

    async def steer(self, req: s.SteerRequest, ctx: CallContext) -> s.SteerResponse:
        _require(req.text, "text")
        session = await self._session(req.session_id, ctx)
        active = await self._active(session, "")
        await self._turns.steer(active, req.text)
        return s.SteerResponse(turn_id=active.rec.turn_id)

    async def get_usage(self, req: s.GetUsageRequest, ctx: CallContext) -> s.UsageReport:
        session = await self._session(req.session_id, ctx)
        rows = await self._store.ledger(session.id)
        return s.UsageReport(
            total=await session_usage(self._store, session.id),
            entries=[ledger_entry(r) for r in rows],
        )


def _rule_proto(rule: RuleRecord) -> s.Rule:
    return s.Rule(
        id=rule.id,
        scope=rule.scope,  # type: ignore[arg-type]
        kind=rule.kind,  # type: ignore[arg-type]
        scope_label=rule.scope_label,
        session_id=rule.session_id if rule.scope == s.RULE_SCOPE_SESSION else "",
        workspace=rule.workspace,
        caller=rule.caller,
        create_time=_stamp(rule.create_time),
        request_id=rule.request_id,
    )


def _already_resolved(request_id: str) -> BlitzError:
    return BlitzError(
        Reason.ALREADY_RESOLVED,
        "that request was already resolved",
        {"request_id": request_id},
    )
