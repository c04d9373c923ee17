"""Approval rules and resolutions: what a decision covers and how a request ended.

A SESSION or ALWAYS decision stores a rule holding the request's `scope_label` (for example
`command: git status` or `network: pypi.org`), or, when the user edited the command, the
edited command's. A later action is covered when a rule of the same kind holds exactly its
scope label. Nothing in a label is a wildcard: a `*` in a command is that character, so a
rule approves nothing its user did not see. A label with a masked secret in it cannot be
told apart from the same action with another secret, so no rule is made from one: such an
action is approved once at a time. A label longer than `SCOPE_LABEL_MAX` is cut the same
way wherever it is made (`blitz.size_limits.clip_label`: its start and the hash of the
whole), so a rule made from an edited command covers that command when the agent runs it.

A resolution is stored with its pending request (JSON) and streamed as a `resolution`
event; both are made here so they cannot disagree.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format

from blitz.errors import invalid_argument
from blitz.ports.agent import AnswerResult, ApprovalResult, Resolution
from blitz.redact import MASK, redact_text
from blitz.size_limits import clip_label
from blitz.store import RuleRecord
from blitz.v1 import turn_pb2 as t

__all__ = [
    "Outcome",
    "outcome_from_json",
    "result_of",
    "rule_label",
    "rule_shown",
]


def rule_label(approval: t.ApprovalRequest, command: str = "") -> str:
    """What a rule made by approving `approval` covers; `command` is an edited command.

    INVALID_ARGUMENT (on `decision`) when the label holds a secret.
    """
    label = approval.scope_label
    if command:
        # An edited command keeps its family (`command+network:`, …): the box it runs in.
        family = label.partition(": ")[0] if label.startswith("command") else "command"
        label = clip_label(redact_text(f"{family}: {command}"))
    if MASK in label:
        raise invalid_argument(
            "decision",
            "this action holds a secret, so no rule can cover it: approve it ONCE",
        )
    return label


def rule_shown(rule: RuleRecord) -> str:
    """A rule as the model and clients are told of it."""
    if rule.match_kind == t.RULE_MATCH_COMMAND_PREFIX:
        return f"{rule.scope_label.partition(': ')[0]}: {rule.pattern} …"
    if rule.match_kind == t.RULE_MATCH_PATH_GLOB:
        return f"{rule.scope_label.partition(': ')[0]}: {rule.pattern}"
    return rule.scope_label


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
        interrupt: bool = False,
        client: str = "",
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
                interrupt=interrupt and not approved,
                client=client,
            ),
        )

    def saved(self, rule: RuleRecord) -> None:
        """Name on the resolution the rule its decision saves (Resolution.saved_rule)."""
        self.event.rule_id = rule.id
        self.event.saved_rule.CopyFrom(
            t.RuleMatch(
                match=rule.match_kind,  # type: ignore[arg-type]
                pattern=rule.pattern,
                effect=rule.effect,  # type: ignore[arg-type]
                label=rule_shown(rule),
            )
        )

    @property
    def interrupts(self) -> bool:
        """A deny that also stops the turn."""
        return self.event.interrupt

    @classmethod
    def answer(
        cls,
        request_id: str,
        answers: tuple[str, ...],
        *,
        by: str = "",
        via: str = "answer",
        values: dict[str, Any] | None = None,
        declined: bool = False,
        client: str = "",
    ) -> Outcome:
        event = t.Resolution(
            request_id=request_id,
            answers=answers,
            resolved_by=by,
            via=via,
            declined=declined,
            client=client,
        )
        if values is not None:
            event.values.update(values)
        return cls(AnswerResult(answers, values, declined), event)

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
            "interrupt": e.interrupt,
            **({"values": json_format.MessageToDict(e.values)} if e.HasField("values") else {}),
            **({"declined": True} if e.declined else {}),
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
        return Outcome.answer(
            request_id,
            tuple(body["answers"]),
            by=body["by"],
            via=body["via"],
            values=body.get("values"),
            declined=body.get("declined", False),
        )
    return Outcome.approval(
        request_id,
        body["decision"],
        reason=body["reason"],
        command=body["command"],
        by=body["by"],
        via=body["via"],
        rule_id=body["rule_id"],
        interrupt=body.get("interrupt", False),
    )


def result_of(request_id: str, text: str) -> Resolution | None:
    """What the agent is told of a stored resolution (None: withdrawn)."""
    return outcome_from_json(request_id, text).result
