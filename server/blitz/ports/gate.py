"""The one order an action that may need a person is decided in, for every agent.

The built-in agent's policy gate (`blitz.agent.policy`) and an ACP agent's requests
(`blitz.acp.decisions`) both call `decide_action`: plan mode refuses what changes the
world, a read-only turn refuses it with its own reason, an action a person approved
already goes ahead, an aside refuses what would need asking, the session's pre_tool hooks
may allow, deny, ask or rewrite (docs/hooks.md), the session's mode approves the kinds it
approves, a stored rule decides, and otherwise a person does. Each caller keeps its own
part: what counts as changing the world, how a refusal reaches its agent, how a rewritten
input is checked (`Rewrites.reshape`) and how it parks. It lives here, beside `TurnIO`,
because the core implements the `TurnIO` it calls and the agents call it: it asks, and
never performs an action itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blitz.ports.agent import TurnIO, TurnPolicy
from blitz.v1 import turn_pb2

__all__ = ["ASIDE_REFUSAL", "PLAN_REFUSAL", "Verdict", "decide_action"]

PLAN_REFUSAL = (
    "plan mode: nothing may be changed or run now; add this step to the proposed plan "
    "(the todo list) instead"
)
ASIDE_REFUSAL = (
    "this is a side question: actions that need the user's approval are not allowed; "
    "answer from what you can read"
)


@dataclass(frozen=True)
class Verdict:
    """How an action was decided. `allowed`: True (it goes ahead), False (refused, `reason`
    for the agent) or None (a person decides, asked `request`). `by` says who decided:
    "plan", "read_only", "approved", "aside", "hook", "mode", "rule", or "" (a person).
    `request` is the action as a person would see it, as hooks rewrote it; `rewritten`
    the tool's input as they did (None: as asked), which the caller acts with."""

    allowed: bool | None
    by: str
    request: turn_pb2.ApprovalRequest
    reason: str = ""
    rewritten: dict[str, Any] | None = None


async def decide_action(
    io: TurnIO,
    policy: TurnPolicy,
    request: turn_pb2.ApprovalRequest,
    tool_input: Mapping[str, Any],
    *,
    mutating: bool,
    approved: bool = False,
    rewrites: frozenset[str] = frozenset(),
) -> Verdict:
    """Decide `request` in the order of the module doc. `tool_input` is the tool's input as
    hooks are shown it, `mutating` whether the action changes the world (plan mode and
    read-only refuse it), `approved` whether a person approved this very call already,
    `rewrites` what of the input a hook may rewrite (a `Rewrites`: and how it then reads)."""
    if policy.plan and mutating:
        return Verdict(False, "plan", request, PLAN_REFUSAL)
    if policy.read_only and mutating:
        return Verdict(False, "read_only", request, policy.read_only)
    if approved:
        return Verdict(True, "approved", request)
    if policy.aside:
        return Verdict(False, "aside", request, ASIDE_REFUSAL)
    hooked = await io.pre_tool(request, tool_input, rewritable=rewrites)
    rewritten = None
    if hooked is not None:
        if hooked.decision == "deny":
            return Verdict(False, "hook", request, hooked.reason)
        if hooked.updated_input is not None:
            rewritten = dict(hooked.updated_input)
        if hooked.request is not None:
            request = hooked.request
        if hooked.decision == "allow":
            return Verdict(True, "hook", request, rewritten=rewritten)
        if hooked.decision == "ask":
            # A person decides, whatever the mode or a rule would say.
            return Verdict(None, "", request, hooked.reason, rewritten)
    if request.kind in policy.approved_kinds:
        text = f"Approved by the session's mode ({policy.mode}): {request.detail}"
        io.emit(turn_pb2.TurnEvent(notice=turn_pb2.Notice(text=text)))
        return Verdict(True, "mode", request, rewritten=rewritten)
    decided = await io.rule_decides(request)
    if decided is not None:
        reason = "" if decided.allowed else f"denied by the rule {decided.rule!r}"
        return Verdict(decided.allowed, "rule", request, reason, rewritten)
    return Verdict(None, "", request, rewritten=rewritten)
