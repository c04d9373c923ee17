"""Approval rules and resolutions: what a decision covers and how a request ended.

A SESSION or ALWAYS decision stores a rule holding the request's `scope_label` (for example
`command: git status` or `write: src/**`). A later action is covered when a rule of the
same kind matches the action's own label, `<kind>: <detail>`, where `*` in the rule matches
any run of characters. A rule never approves an action of another kind.

A resolution is stored with its pending request (JSON) and streamed as a `resolution`
event; both are made here so they cannot disagree.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from blitz.agent.contract import AnswerResult, ApprovalResult, Resolution
from blitz.store import RuleRecord
from blitz.v1 import turn_pb2 as t

__all__ = [
    "Outcome",
    "action_label",
    "covering_rule",
    "outcome_from_json",
    "result_of",
]

_KIND_WORDS = {
    t.ACTION_KIND_COMMAND: "command",
    t.ACTION_KIND_WRITE: "write",
    t.ACTION_KIND_DELETE: "delete",
    t.ACTION_KIND_NETWORK: "network",
    t.ACTION_KIND_MCP: "mcp",
}


def action_label(approval: t.ApprovalRequest) -> str:
    """The label of this one action, e.g. `write: src/app.py`."""
    return f"{_KIND_WORDS.get(approval.kind, 'action')}: {approval.detail}"


@lru_cache(maxsize=1024)
def _pattern(label: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in label.split("*")) + "$", re.S)


def covering_rule(rules: list[RuleRecord], approval: t.ApprovalRequest) -> RuleRecord | None:
    """The first rule that covers `approval`, if any."""
    label = action_label(approval)
    for rule in rules:
        if rule.kind == approval.kind and (
            rule.scope_label == approval.scope_label or _pattern(rule.scope_label).match(label)
        ):
            return rule
    return None


class Outcome:
    """How one request ended: the result for the agent and the event for watchers."""

    def __init__(self, result: Resolution | None, event: t.Resolution) -> None:
        # None when the request was withdrawn: the agent never sees it.
        self.result = result
        self.event = event

    @classmethod
    def approval(
        cls,
        request_id: str,
        decision: int,
        *,
        reason: str = "",
        command: str = "",
        by: str = "",
        via: str = "decide",
        rule_id: str = "",
    ) -> Outcome:
        approved = decision != t.DECISION_DENY
        return cls(
            ApprovalResult(approved, reason, command if approved else ""),
            t.Resolution(
                request_id=request_id,
                decision=decision,  # type: ignore[arg-type]
                reason=reason,
                command=command,
                resolved_by=by,
                via=via,
                rule_id=rule_id,
            ),
        )

    @classmethod
    def answer(
        cls, request_id: str, answers: tuple[str, ...], *, by: str = "", via: str = "answer"
    ) -> Outcome:
        return cls(
            AnswerResult(answers),
            t.Resolution(request_id=request_id, answers=answers, resolved_by=by, via=via),
        )

    @classmethod
    def withdrawn(cls, request_id: str) -> Outcome:
        return cls(None, t.Resolution(request_id=request_id, via="withdrawn"))

    def to_json(self) -> str:
        e = self.event
        body: dict[str, Any] = {
            "decision": e.decision,
            "answers": list(e.answers),
            "reason": e.reason,
            "command": e.command,
            "by": e.resolved_by,
            "via": e.via,
            "rule_id": e.rule_id,
            "type": "withdrawn"
            if self.result is None
            else "approval"
            if isinstance(self.result, ApprovalResult)
            else "answer",
        }
        return json.dumps(body)


def outcome_from_json(request_id: str, text: str) -> Outcome:
    body = json.loads(text)
    if body["type"] == "withdrawn":
        return Outcome.withdrawn(request_id)
    if body["type"] == "answer":
        return Outcome.answer(request_id, tuple(body["answers"]), by=body["by"], via=body["via"])
    return Outcome.approval(
        request_id,
        body["decision"],
        reason=body["reason"],
        command=body["command"],
        by=body["by"],
        via=body["via"],
        rule_id=body["rule_id"],
    )


def result_of(request_id: str, text: str) -> Resolution | None:
    """What the agent is told of a stored resolution (None: withdrawn)."""
    return outcome_from_json(request_id, text).result
