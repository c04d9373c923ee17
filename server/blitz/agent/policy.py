"""The policy gate every action passes before it acts: go ahead, refuse, or ask.

An action that needs a person (a command, a write, a delete, a fetch of an ungranted host,
an MCP call) calls `gate` with what it would do. In order: plan mode refuses anything that
changes the world, `read_only` refuses WRITE, DELETE, COMMAND and MCP with its own string as
the reason, a call the user already approved goes ahead, an aside refuses anything that
would need asking, the session's pre_tool hooks (`TurnIO.pre_tool`, docs/hooks.md) may
allow, deny, leave it to a person or rewrite it, the session's mode may approve its kind
(accept edits, bypass), a stored rule (`TurnIO.rule_decides`) approves or denies without
asking, and otherwise the call parks on an `ApprovalRequest` (pydantic-ai's
`ApprovalRequired`), which names the acting agent and its current task. A tool whose input
a hook may rewrite (`run_command`'s command) gates with `gate_input` and acts on what it
returns. The gate is the same for a sub-agent's tools:
it runs with the parent turn's policy and its `TurnIO`.
A refusal is a string the tool returns to the model as its error, never an exception, so
the model can adapt. What a request shows is bounded (`blitz.size_limits`): a detail or a
diff past its limit keeps its start and says what was left out, and a long scope label
keeps its start and the hash of the whole, so a rule still covers exactly one action.
This module decides only; it must never perform an action itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from pydantic_ai.exceptions import ApprovalRequired

from blitz.size_limits import DETAIL_MAX, DIFF_MAX, clip, clip_label
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from blitz.agent.deps import ToolDeps

__all__ = ["MUTATING_KINDS", "PLAN_TOOLS", "Action", "gate", "gate_input"]

# What read_only refuses (MCP too: what an MCP tool changes is unknown).
MUTATING_KINDS = frozenset(
    {
        turn_pb2.ACTION_KIND_WRITE,
        turn_pb2.ACTION_KIND_DELETE,
        turn_pb2.ACTION_KIND_COMMAND,
        turn_pb2.ACTION_KIND_MCP,
    }
)

# The only tools a plan-mode run is offered: looking around, planning, asking.
PLAN_TOOLS = frozenset({"read_file", "list_files", "search", "fetch_url", "todo", "ask_user"})

_PLAN_REFUSAL = (
    "plan mode: nothing may be changed or run now; add this step to the proposed plan "
    "(the todo list) instead"
)
_ASIDE_REFUSAL = (
    "this is a side question: actions that need the user's approval are not allowed; "
    "answer from what you can read"
)


@dataclass(frozen=True)
class Action:
    """What an approval request shows: the kind, one line, a diff, and the rule scope."""

    kind: int
    detail: str
    scope_label: str
    diff: str = ""
    # It runs a command (whatever its kind: a command that needs the network asks a
    # NETWORK approval): plan mode and read_only refuse it.
    runs: bool = False

    @property
    def mutating(self) -> bool:
        return self.runs or self.kind in MUTATING_KINDS

    def bounded(self) -> Action:
        """The action as a request may show it: each part within its size limit."""
        return replace(
            self,
            detail=clip(self.detail, DETAIL_MAX, what="detail"),
            diff=clip(self.diff, DIFF_MAX, what="diff"),
            scope_label=clip_label(self.scope_label),
        )

    def metadata(self) -> dict[str, Any]:
        """What travels in `ApprovalRequired.metadata`, for parking.py to build the request."""
        return {
            "kind": int(self.kind),
            "detail": self.detail,
            "diff": self.diff,
            "scope_label": self.scope_label,
        }


async def gate(
    ctx: RunContext[ToolDeps], action: Action, *, tool_input: Mapping[str, Any] | None = None
) -> str | None:
    """None when the action may go ahead now; else the reason it is refused.

    `tool_input`: the tool's arguments as pre_tool hooks are shown them. Raises
    `ApprovalRequired` when a person must decide (the run then parks).
    """
    refused, _ = await gate_input(ctx, action, tool_input=tool_input)
    return refused


async def gate_input(
    ctx: RunContext[ToolDeps],
    action: Action,
    *,
    tool_input: Mapping[str, Any] | None = None,
    rewritable: frozenset[str] = frozenset(),
) -> tuple[str | None, dict[str, Any] | None]:
    """As `gate`, and the tool's input as a pre_tool hook rewrote it (None: as asked): the
    keys of `rewritable` only, which the tool then acts with."""
    action = action.bounded()
    policy = ctx.deps.policy
    if policy.plan and action.mutating:
        return _PLAN_REFUSAL, None
    if policy.read_only and action.mutating:
        return policy.read_only, None
    if ctx.tool_call_approved:
        return None, None
    if policy.aside:
        return _ASIDE_REFUSAL, None
    task_id = ctx.deps.tasks.current()
    request = turn_pb2.ApprovalRequest(
        request_id=ctx.tool_call_id or "",
        tool=ctx.deps.display_name(ctx.tool_name or ""),
        kind=action.kind,  # type: ignore[arg-type]
        detail=action.detail,
        diff=action.diff,
        scope_label=action.scope_label,
        agent=ctx.deps.agent,
        task_id=task_id,
    )
    shown = {"detail": action.detail} if tool_input is None else tool_input
    hooked = await ctx.deps.io.pre_tool(request, shown, rewritable=rewritable)
    rewritten = None
    if hooked is not None:
        if hooked.decision == "deny":
            return hooked.reason, None
        if hooked.updated_input is not None:
            rewritten = {k: v for k, v in hooked.updated_input.items() if k in rewritable}
        if hooked.request is not None:
            request = hooked.request
        if hooked.decision == "allow":
            return None, rewritten
        if hooked.decision == "ask":
            raise ApprovalRequired(_parked(request, task_id))
    if action.kind in policy.approved_kinds:
        text = f"Approved by the session's mode ({policy.mode}): {request.detail}"
        ctx.deps.io.emit(turn_pb2.TurnEvent(notice=turn_pb2.Notice(text=text)))
        return None, rewritten
    decided = await ctx.deps.io.rule_decides(request)
    if decided is not None:
        return (None if decided.allowed else f"denied by the rule {decided.rule!r}"), rewritten
    raise ApprovalRequired(_parked(request, task_id))


def _parked(request: turn_pb2.ApprovalRequest, task_id: str) -> dict[str, Any]:
    """What travels in `ApprovalRequired.metadata`, for parking.py to build the request: the
    action as asked (as a hook rewrote it, and its edit), and the task as it is now (a later
    todo call of the same step must not move it)."""
    metadata: dict[str, Any] = {
        "kind": int(request.kind),
        "detail": request.detail,
        "diff": request.diff,
        "scope_label": request.scope_label,
        "task_id": task_id,
    }
    if request.HasField("hook_edit"):
        metadata["hook_edit"] = json_format.MessageToDict(request.hook_edit)
    if request.asked_by_hook:
        metadata["asked_by_hook"] = request.asked_by_hook
    return metadata
