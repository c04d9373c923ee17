"""The calls that answer a parked turn's requests: Decide and Answer, and the rules.

`DecisionCalls` is the part of `SessionCore` (service.py) that takes a person's answer to
an approval request or a question: the request is checked against what was asked
(`validation.py`), resolved exactly once through the pending requests (the first answer
wins; later ones get ALREADY_RESOLVED), and a SESSION or ALWAYS decision leaves a rule.
Both are interactions: agent work gives way to them (interactions.py).
`ListRules` and `RevokeRule` show and remove those rules. Resuming the turn is the
pending requests' and the turn driver's business, not this module's.
"""

from __future__ import annotations

import time
import uuid

from google.protobuf import json_format

from blitz.core.api import validation as check
from blitz.core.api.views import rule_view
from blitz.core.driver.interactions import Interactions
from blitz.core.driver.turns import Turns, interrupted
from blitz.core.requests.approvals import Outcome, rule_label
from blitz.core.requests.pending import PendingRequests
from blitz.core.requests.rules import made_rule
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import CallContext
from blitz.store import PendingRecord, RuleRecord, SessionRecord, Store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["CLIENT_HEADER", "RULES_MAX", "DecisionCalls", "client_of"]

# The request header a client names itself by (Resolution.client).
CLIENT_HEADER = "blitz-client"

# The most rules that may apply to one session (its own and its caller's ALWAYS rules).
RULES_MAX = 200


class DecisionCalls:
    """Decide, Answer, ListRules and RevokeRule; `SessionCore` holds what they use."""

    _store: Store
    _pending: PendingRequests
    _turns: Turns
    _interactions: Interactions

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        raise NotImplementedError  # pragma: no cover - SessionCalls.session_record

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
        return await self.decide_via(req, ctx, via="decide")

    async def decide_via(
        self, req: s.DecideRequest, ctx: CallContext, *, via: str
    ) -> s.DecideResponse:
        """Decide, made some other way than the RPC (`via`: "link", "slack"; the
        resolution says it): the same checks, the same single resolution."""
        # Someone waits on it: agent work gives way until it returns (interactions.py).
        with self._interactions.under_way():
            return await self._decide(req, ctx, via=via)

    async def _decide(
        self, req: s.DecideRequest, ctx: CallContext, *, via: str
    ) -> s.DecideResponse:
        check.check_decision(req)
        session = await self.session_record(req.session_id, ctx)
        pending, event = await self._open_request(session.id, req.request_id)
        check.check_decision(req, event)
        approval = event.approval_request
        # What a pre_tool hook rewrote runs, unless the person edits it again.
        command = req.command or _hook_command(approval)
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
            label = rule_label(approval, command)
            match, pattern, label = made_rule(req.rule, approval, label=label)
            now = time.time()
            lasts = (
                req.rule.lasts.ToTimedelta().total_seconds() if req.rule.HasField("lasts") else 0
            )
            rule = RuleRecord(
                id="r_" + uuid.uuid4().hex,
                scope=s.RULE_SCOPE_ALWAYS if always else s.RULE_SCOPE_SESSION,
                kind=approval.kind,
                scope_label=label,
                session_id=session.id,
                workspace=session.workspace,
                caller=session.owner,
                create_time=now,
                request_id=approval.request_id,
                match_kind=match,
                pattern=pattern,
                effect=t.RULE_EFFECT_DENY if req.rule.effect == t.RULE_EFFECT_DENY else 1,
                expire_time=now + lasts if lasts else None,
            )
        # A rule that denies denies the action it was made for too.
        denies = rule is not None and rule.effect == t.RULE_EFFECT_DENY
        outcome = Outcome.approval(
            req.request_id,
            t.DECISION_DENY if denies else req.decision,
            reason=req.reason,
            command="" if denies else command,
            by=ctx.caller,
            via=via,
            interrupt=req.interrupt,
            client=client_of(ctx),
        )
        if rule is not None:
            outcome.saved(rule)
        if not await self._pending.resolve(pending, outcome, rule=rule):
            raise _already_resolved(req.request_id)
        if req.interrupt and await self._store.list_pending(session.id, turn_id=pending.turn_id):
            # Others are still open: the turn ends here, and they are withdrawn. (Its last
            # open request: the turn ends instead of resuming, in Turns.answered.)
            await self._turns.cancel_turn(session, pending.turn_id, interrupted())
        return s.DecideResponse()

    async def answer(self, req: s.AnswerRequest, ctx: CallContext) -> s.AnswerResponse:
        return await self.answer_via(req, ctx, via="answer")

    async def answer_via(
        self, req: s.AnswerRequest, ctx: CallContext, *, via: str
    ) -> s.AnswerResponse:
        """Answer, made some other way than the RPC (as `decide_via`)."""
        with self._interactions.under_way():
            return await self._answer(req, ctx, via=via)

    async def _answer(
        self, req: s.AnswerRequest, ctx: CallContext, *, via: str
    ) -> s.AnswerResponse:
        check.check_answers(req)
        session = await self.session_record(req.session_id, ctx)
        pending, event = await self._open_request(session.id, req.request_id)
        check.check_answers(req, event)
        outcome = Outcome.answer(
            req.request_id,
            tuple(req.answers),
            by=ctx.caller,
            via=via,
            values=json_format.MessageToDict(req.values) if req.HasField("values") else None,
            declined=req.decline,
            client=client_of(ctx),
        )
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


def client_of(ctx: CallContext) -> str:
    """The client a call names itself by (the `blitz-client` header), for the resolution
    it makes: printable, at most 64 characters; "" when it says nothing."""
    given = ctx.metadata.get(CLIENT_HEADER, "")
    return "".join(c for c in given if c.isprintable())[:64]


def _already_resolved(request_id: str) -> BlitzError:
    return BlitzError(
        Reason.ALREADY_RESOLVED, "that request was already resolved", {"request_id": request_id}
    )


def _hook_command(approval: t.ApprovalRequest) -> str:
    """The command a pre_tool hook rewrote the request's to ("" when none did)."""
    if not approval.HasField("hook_edit"):
        return ""
    value = approval.hook_edit.input.fields.get("command")
    return value.string_value if value is not None else ""
