"""Requests a stored rule decides as they are asked, and what a request offers beside.

When an approval is asked, while its turn runs or as it parks, the session's rules are
looked up against it as clients see it (masked); a rule that covers it decides it at
once, and that is announced (a notice, then its `resolution`) instead of the request.
A request no rule decides says which decisions Decide takes for it and the rule a client
may offer (`offer`). One whose label holds a masked secret may be denied by a rule, never
allowed: no rule can tell it from the same action with another secret. Which rules apply
and how a resolution reads are `rules.py`'s and `approvals.py`'s; storing and ending
requests is `pending.py`'s.
"""

from __future__ import annotations

from blitz import metrics
from blitz.core.active_turn import ActiveTurn
from blitz.core.events.event_log import EventLog
from blitz.core.requests.approvals import Outcome, rule_shown
from blitz.core.requests.request_events import decision_of, of_step
from blitz.core.requests.rules import Verdict, destructive_action, suggested_rule, verdict
from blitz.redact import MASK
from blitz.store import RuleRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["announce_rule", "offer", "verdict_on"]


def verdict_on(rules: list[RuleRecord], approval: t.ApprovalRequest) -> Verdict | None:
    """What the rules say of a request as clients see it. One whose label holds a masked
    secret may be denied by a rule, never allowed: no rule can tell it from the same action
    with another secret; nor one a pre_tool hook asked a person to decide (docs/hooks.md)."""
    found = verdict(rules, approval)
    if found is not None and found.allowed:
        if MASK in approval.scope_label or approval.asked_by_hook:
            return None
    return found


async def announce_rule(
    log: EventLog, active: ActiveTurn, request_id: str, found: Verdict, request: t.TurnEvent
) -> Outcome:
    """Announce that `found` decided the request (in the workflow step `request` is of): a
    notice, then its resolution, committed. Returns the outcome, to store with it."""
    rule = found.rule
    decision = t.DECISION_ALWAYS if rule.scope == s.RULE_SCOPE_ALWAYS else t.DECISION_SESSION
    if not found.allowed:
        decision = t.DECISION_DENY
    reason = "" if found.allowed else f"denied by the rule {rule_shown(rule)!r}"
    outcome = Outcome.approval(request_id, decision, reason=reason, via="rule", rule_id=rule.id)
    sid, tid, fence = active.session_id, active.turn_id, active.rec.epoch
    verb = "Approved" if found.allowed else "Denied"
    notice = t.Notice(text=f"{verb} by rule {rule_shown(rule)!r}.")
    log.emit(sid, tid, of_step(t.TurnEvent(notice=notice), request), fence=fence)
    resolved = of_step(t.TurnEvent(resolution=outcome.event), request)
    await log.commit(sid, tid, resolved, fence=fence)
    # Never announced: it waited for nothing.
    metrics.request_resolved("approval", "rule", decision_of(outcome.event, "approval"), 0.0)
    return outcome


def offer(approval: t.ApprovalRequest) -> None:
    """Say on a request which decisions Decide takes for it, and the rule a client may
    offer beside the exact one (none for a destructive command, which is marked so)."""
    approval.destructive = destructive_action(approval) is not None
    if MASK in approval.scope_label:
        approval.available_decisions[:] = [t.DECISION_ONCE, t.DECISION_DENY]
        return
    approval.available_decisions[:] = [
        t.DECISION_ONCE, t.DECISION_SESSION, t.DECISION_ALWAYS, t.DECISION_DENY
    ]  # fmt: skip
    suggestion = suggested_rule(approval)
    if suggestion is not None:
        approval.suggested_rule.CopyFrom(suggestion)
