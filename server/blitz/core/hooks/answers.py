"""What a hook's answer means (docs/hooks.md, "What a hook answers"), as Claude Code's
hooks answer.

A command hook answers by its exit code and its stdout: exit 2 blocks, with its stderr as
the reason (its stdout is not read); exit 0 goes on, and its stdout, if any, is one JSON
object. An HTTP hook answers 2xx with the same JSON in its body (or none). What the JSON
may hold: `decision` ("block"; pre_tool also "approve", Claude Code's older spelling of
allow) and `reason`; `continue: false` with `stopReason` (block, said otherwise: the
turn_end hook lets the agent stop); `systemMessage` for the user; and
`hookSpecificOutput` with `permissionDecision` (allow, deny, ask; "defer" is nothing),
`permissionDecisionReason`, `updatedInput` and `additionalContext`. Anything else at the
top level is ignored, as Claude Code ignores `suppressOutput`. turn_start takes plain text
on stdout as context, as Claude Code does for UserPromptSubmit. Any other exit code, a
timeout, or an answer that is not that JSON (not JSON, not an object, a field of the wrong
type, a decision this event cannot make) is a failure (`Failed`), which the hook's `fail`
makes a deny or nothing (running.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from blitz.v1 import turn_pb2 as t

__all__ = ["Answer", "Failed", "blocked", "read_answer"]

_NONE = t.HOOK_DECISION_NONE
_ALLOW = t.HOOK_DECISION_ALLOW
_DENY = t.HOOK_DECISION_DENY
_ASK = t.HOOK_DECISION_ASK
_CONTINUE = t.HOOK_DECISION_CONTINUE


class Failed(Exception):
    """The hook failed, in our words: it could not run, exited otherwise, timed out, or
    answered garbage."""


@dataclass(frozen=True)
class Answer:
    """What a hook's answer decided, and what it said."""

    decision: int = _NONE
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: str = ""
    system_message: str = ""


def blocked(event: str, reason: str) -> Answer:
    """What blocking means at this event: a deny (turn_start, pre_tool, post_tool), going
    on (turn_end), or nothing (notification)."""
    if event == "turn_end":
        return Answer(_CONTINUE, reason)
    if event == "notification":
        return Answer(_NONE, reason)
    return Answer(_DENY, reason)


def read_answer(event: str, text: str) -> Answer:
    """What a hook that went on (exit 0, or 2xx) answered in `text`; Failed for garbage."""
    text = text.strip()
    if not text:
        return Answer()
    try:
        body = json.loads(text)
    except ValueError:
        if event == "turn_start" and not text.startswith(("{", "[")):
            return Answer(context=text)
        raise Failed("it answered something that is not JSON") from None
    if not isinstance(body, dict):
        raise Failed("its answer is JSON but not an object")
    answer = _top_level(event, body)
    specific = body.get("hookSpecificOutput")
    if specific is None or body.get("continue") is False:
        return answer  # `continue: false` wins over everything else it says
    if not isinstance(specific, dict):
        raise Failed("hookSpecificOutput must be an object")
    return _specific(event, answer, specific)


def _top_level(event: str, body: dict[str, Any]) -> Answer:
    decision = _text(body, "decision")
    reason = _text(body, "reason")
    message = _text(body, "systemMessage")
    goes_on = body.get("continue", True)
    if not isinstance(goes_on, bool):
        raise Failed("continue must be true or false")
    if not goes_on:
        reason = _text(body, "stopReason") or reason or "stopped by the hook"
        # Stopping at turn_end is what the agent was about to do anyway.
        answer = Answer(_NONE, reason) if event == "turn_end" else blocked(event, reason)
        return Answer(answer.decision, answer.reason, system_message=message)
    if decision in ("", "undefined"):
        return Answer(_NONE, reason, system_message=message)
    if decision == "block":
        made = blocked(event, reason or "blocked by the hook")
        return Answer(made.decision, made.reason, system_message=message)
    if decision == "approve" and event == "pre_tool":
        return Answer(_ALLOW, reason, system_message=message)
    raise Failed(f"decision {decision!r} is not one a {event} hook can make")


_PERMISSIONS = {"allow": _ALLOW, "deny": _DENY, "ask": _ASK, "defer": _NONE}


def _specific(event: str, answer: Answer, specific: dict[str, Any]) -> Answer:
    decision, reason = answer.decision, answer.reason
    permission = _text(specific, "permissionDecision")
    if permission:
        if event != "pre_tool" or permission not in _PERMISSIONS:
            raise Failed(f"permissionDecision {permission!r} is not one a {event} hook can make")
        decision = _PERMISSIONS[permission]
        reason = _text(specific, "permissionDecisionReason") or reason
    updated = specific.get("updatedInput")
    if updated is not None and (event != "pre_tool" or not isinstance(updated, dict)):
        raise Failed("updatedInput must be an object, and only a pre_tool hook gives one")
    context = _text(specific, "additionalContext")
    if context and event in ("turn_end", "notification"):
        raise Failed(f"a {event} hook adds no context")
    return Answer(decision, reason, updated, context, answer.system_message)


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Failed(f"{key} must be a string")
    return value
