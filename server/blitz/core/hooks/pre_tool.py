"""pre_tool hooks (docs/hooks.md, "pre_tool"): what they say of one action at the gate.

Hooks run in order, each shown the input as the ones before it left it. A deny stops
there; of the others, ask wins over allow. An allow still yields to a DENY rule. An allow
or a deny is announced as a rule's decision is, with a `resolution` via "hook"; an ask (and
a rewrite with no decision) leaves the action to the mode, the rules and a person, shown
as rewritten.

A hook's `updatedInput` is taken for the keys the caller says may be rewritten, each with
a value of the type it had. How the rewritten action reads is the caller's to say
(`Rewrites.reshape`: the tool checks the new input as it checks its own, a path in the
workspace, a URL's address), so a hook cannot lead an action anywhere its agent could not;
a rewrite the tool refuses denies the action. Without a reshape, the input is a command's
and its `command` is the line. Nothing here acts; it decides and announces.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from blitz.core.active_turn import ActiveTurn
from blitz.core.hooks import payloads
from blitz.core.hooks.matching import Target, applies
from blitz.core.hooks.running import Ran
from blitz.core.hooks.specs import HookSpec
from blitz.core.requests.approvals import Outcome
from blitz.core.requests.pending import PendingRequests
from blitz.core.requests.rules import command_of, path_of
from blitz.ports import HookVerdict, Rewrites
from blitz.redact import redact_text
from blitz.size_limits import DETAIL_MAX, clip, clip_label
from blitz.v1 import turn_pb2 as t

__all__ = ["PreToolHooks"]

_ALLOW = t.HOOK_DECISION_ALLOW
_DENY = t.HOOK_DECISION_DENY
_ASK = t.HOOK_DECISION_ASK


class PreToolHooks:
    """The pre_tool hooks of one run of a turn."""

    def __init__(
        self,
        specs: list[HookSpec],
        *,
        run: Callable[[HookSpec, dict[str, Any]], Awaitable[Ran]],
        base: Callable[[], payloads.Common],
        emit: Callable[[t.TurnEvent], None],
        commit: Callable[[t.TurnEvent], Awaitable[None]],
        add_context: Callable[[str, str], None],
        pending: PendingRequests,
        active: ActiveTurn,
    ) -> None:
        self._specs = specs
        self._run = run
        self._base = base
        self._emit = emit
        self._commit = commit
        self._add_context = add_context
        self._pending = pending
        self._active = active

    async def decide(
        self,
        approval: t.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str],
    ) -> HookVerdict | None:
        """What the pre_tool hooks say of the action (see the module doc)."""
        target = Target(
            approval.tool, command_of(approval.scope_label), path_of(approval.scope_label)
        )
        specs = [s for s in self._specs if applies(s, target)]
        if not specs:
            return None
        original = dict(tool_input)
        current = dict(tool_input)
        shown = approval
        asked: tuple[HookSpec, str] | None = None
        allowed: HookSpec | None = None
        for spec in specs:
            ran = await self._run(spec, payloads.pre_tool(self._base(), shown, current))
            answer, outcome = ran.answer, ran.outcome
            outcome.tool, outcome.tool_call_id = approval.tool, approval.request_id
            refused = ""
            if answer.updated_input is not None:
                changed = _changes(answer.updated_input, current, rewritable)
                if changed is None:
                    outcome.ClearField("updated_input")
                    may = (
                        f"only {', '.join(sorted(rewritable))} of this tool may be rewritten,"
                        " each as the type it was"
                        if rewritable
                        else "nothing of this action may be rewritten"
                    )
                    outcome.reason = f"{outcome.reason} (its updatedInput is ignored: {may})"
                    outcome.reason = outcome.reason.lstrip()
                elif changed:
                    candidate = {**current, **changed}
                    reshaped = await _reshaped(approval, original, rewritable, candidate)
                    if isinstance(reshaped, str):
                        refused = f"the hook {spec.id}'s rewrite is refused: {reshaped}"
                    else:
                        current = candidate
                        shown = _edited(reshaped, original, current, spec.id)
            self._emit(t.TurnEvent(hook=outcome))
            if answer.context:
                self._add_context(answer.context, spec.id)
            if answer.decision == _DENY or refused:
                reason = answer.reason or refused or f"denied by the hook {spec.id}"
                await self._resolved(approval.request_id, spec, t.DECISION_DENY, reason)
                return HookVerdict("deny", reason)
            if answer.decision == _ASK and asked is None:
                asked = (spec, answer.reason)
            elif answer.decision == _ALLOW and allowed is None:
                allowed = spec
        rewritten = current if shown is not approval else None
        stored = asked is not None or allowed is None  # a person may be asked
        if rewritten is not None and stored and _holds_secret(rewritten):
            # Asked for, a rewritten command travels masked in the stored request, and what
            # runs once approved would be the masked text: it is not taken.
            note = "A hook's rewrite holds a secret, which an approval cannot carry: not taken."
            self._emit(t.TurnEvent(notice=t.Notice(text=note)))
            shown, rewritten = approval, None
        if asked is not None:
            if shown is approval:
                shown = t.ApprovalRequest()
                shown.CopyFrom(approval)
            shown.asked_by_hook = asked[0].id
            return HookVerdict("ask", asked[1], rewritten, request=shown)
        if allowed is None:
            return None if rewritten is None else HookVerdict("none", "", rewritten, shown)
        # A DENY rule still refuses what a hook allows (as Claude Code's deny rules do).
        denied = await self._pending.decide_by_rule(self._active, shown, deny_only=True)
        if denied is not None:
            return HookVerdict("deny", f"denied by the rule {denied.rule!r}")
        await self._resolved(approval.request_id, allowed, t.DECISION_ONCE, "")
        return HookVerdict("allow", "", rewritten, shown)

    async def _resolved(self, request_id: str, spec: HookSpec, decision: int, reason: str) -> None:
        """Announce the hook's decision of a request that was never asked, as a rule's is."""
        outcome = Outcome.approval(request_id, decision, reason=reason, by=spec.id, via="hook")
        await self._commit(t.TurnEvent(resolution=outcome.event))


def _holds_secret(rewritten: Mapping[str, Any]) -> bool:
    """Whether masking would change the rewritten command."""
    command = str(rewritten.get("command", ""))
    return redact_text(command) != command


def _changes(
    updated: Mapping[str, Any], current: Mapping[str, Any], rewritable: frozenset[str]
) -> dict[str, Any] | None:
    """What a hook's updatedInput changes of the input (Claude Code's hooks give it whole);
    None when it changes something that may not be rewritten, or gives a value of another
    JSON type than the one it replaces."""
    changed = {key: value for key, value in updated.items() if current.get(key) != value}
    for key, value in changed.items():
        if key not in rewritable:
            return None
        if key in current and _json_type(value) != _json_type(current[key]):
            return None
    return changed


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "null"


async def _reshaped(
    approval: t.ApprovalRequest,
    original: Mapping[str, Any],
    rewritable: frozenset[str],
    rewritten: dict[str, Any],
) -> t.ApprovalRequest | str:
    """The request the rewritten input asks, by the caller's reshape (without one, as a
    command's: the new line, what followed the old one in the detail kept, " (with
    network)"), or the reason the caller refuses it."""
    shown = t.ApprovalRequest()
    shown.CopyFrom(approval)
    reshape = rewritable.reshape if isinstance(rewritable, Rewrites) else None
    if reshape is not None:
        got = await reshape(dict(rewritten))
        if isinstance(got, str):
            return got
        shown.kind, shown.detail, shown.diff = got.kind, got.detail, got.diff
        shown.scope_label = got.scope_label
        return shown
    old, new = str(original.get("command", "")), str(rewritten.get("command", ""))
    family = approval.scope_label.partition(": ")[0]
    if command_of(approval.scope_label) is None:
        family = "command"
    shown.scope_label = clip_label(redact_text(f"{family}: {new}"))
    rest = approval.detail[len(old) :] if old and approval.detail.startswith(old) else ""
    shown.detail = clip(new + rest, DETAIL_MAX, what="detail")
    return shown


def _edited(
    shown: t.ApprovalRequest,
    original: Mapping[str, Any],
    current: Mapping[str, Any],
    hook_id: str,
) -> t.ApprovalRequest:
    """`shown` with the edit named: which hook made it, and the input before and after."""
    edit = shown.hook_edit
    edit.Clear()
    edit.hook_id = hook_id
    edit.original_input.update(dict(original))
    edit.input.update(dict(current))
    return shown
