"""The policy gate every action passes before it acts: go ahead, refuse, or ask.

An action that needs a person (a command, a write, a delete, a fetch of an ungranted host,
an MCP call) calls `gate` with what it would do, and it is decided in the order every agent
shares (`blitz.ports.gate`): plan mode refuses anything that changes the world, `read_only`
refuses WRITE, DELETE, COMMAND and MCP with its own string as the reason, a call the user
already approved goes ahead, an aside refuses anything that would need asking, the
session's pre_tool hooks (`TurnIO.pre_tool`, docs/hooks.md) may allow, deny, leave it to
a person or rewrite it, the session's mode may approve its kind (accept edits, bypass), a
stored rule (`TurnIO.rule_decides`) approves or denies without asking, and otherwise the
call parks on an `ApprovalRequest` (pydantic-ai's `ApprovalRequired`), which names the
acting agent and its current task. A tool whose input a hook may rewrite gates with
`gate_input` and a `Rewrite`: how it checks a rewritten input as it checks its own, so a
hook leads it nowhere the model could not; it acts on the arguments `gate_input` returns.
The gate is the same for a sub-agent's tools: it runs with the parent turn's policy and its
`TurnIO`.
A refusal is a string the tool returns to the model as its error, never an exception, so
the model can adapt. What a request shows is bounded (`blitz.size_limits`): a detail or a
diff past its limit keeps its start and says what was left out, and a long scope label
keeps its start and the hash of the whole, so a rule still covers exactly one action.
This module decides only; it must never perform an action itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from pydantic_ai.exceptions import ApprovalRequired

from blitz.ports import Rewrites, decide_action
from blitz.size_limits import DETAIL_MAX, DIFF_MAX, clip, clip_label
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from blitz.agent.deps import ToolDeps

__all__ = ["MUTATING_KINDS", "PLAN_TOOLS", "Action", "Reshape", "Rewrite", "gate", "gate_input"]

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


# A rewritten tool input -> the action it asks and the tool's arguments that do it, or why
# the tool refuses it (its own checks: a path in the workspace, a URL's address).
Reshape = Callable[[dict[str, Any]], Awaitable[tuple[Action, dict[str, Any]] | str]]


@dataclass(frozen=True)
class Rewrite:
    """What of a tool's input a pre_tool hook may rewrite (`keys`), and how the tool
    checks a rewritten input (`reshape`)."""

    keys: frozenset[str]
    reshape: Reshape


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
    rewrite: Rewrite | None = None,
) -> tuple[str | None, dict[str, Any] | None]:
    """As `gate`, and the tool's arguments as a pre_tool hook's rewrite made them (None: as
    the model gave them), which the tool then acts with, checking them again as it does.
    A person asked is shown the rewritten action, and on approval the call runs with them
    (`metadata["rewritten"]`, kept by parking.py)."""
    action = action.bounded()
    policy = ctx.deps.policy
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
    # The arguments the last rewrite the tool checked makes: what it then acts with.
    made: dict[str, Any] = {}

    async def reshape(rewritten: dict[str, Any]) -> turn_pb2.ApprovalRequest | str:
        assert rewrite is not None
        got = await rewrite.reshape(rewritten)
        if isinstance(got, str):
            return got
        shaped, made["args"] = got[0].bounded(), got[1]
        made["input"] = rewritten
        return turn_pb2.ApprovalRequest(
            kind=shaped.kind,  # type: ignore[arg-type]
            detail=shaped.detail,
            diff=shaped.diff,
            scope_label=shaped.scope_label,
        )

    rewrites = Rewrites(rewrite.keys, reshape) if rewrite is not None else Rewrites()
    shown = {"detail": action.detail} if tool_input is None else tool_input
    verdict = await decide_action(
        ctx.deps.io,
        policy,
        request,
        shown,
        mutating=action.mutating,
        approved=ctx.tool_call_approved,
        rewrites=rewrites,
    )
    args = None
    if verdict.rewritten is not None and made.get("input") == verdict.rewritten:
        args = made["args"]
    if verdict.allowed is None:
        raise ApprovalRequired(_parked(verdict.request, task_id, args))
    return (None if verdict.allowed else verdict.reason), args


def _parked(
    request: turn_pb2.ApprovalRequest, task_id: str, rewritten: dict[str, Any] | None
) -> dict[str, Any]:
    """What travels in `ApprovalRequired.metadata`, for parking.py to build the request: the
    action as asked (as a hook rewrote it, and its edit, and the arguments that do it), and
    the task as it is now (a later todo call of the same step must not move it)."""
    metadata: dict[str, Any] = {
        "kind": int(request.kind),
        "detail": request.detail,
        "diff": request.diff,
        "scope_label": request.scope_label,
        "task_id": task_id,
    }
    if request.HasField("hook_edit"):
        metadata["hook_edit"] = json_format.MessageToDict(request.hook_edit)
    if rewritten is not None:
        metadata["rewritten"] = rewritten
    if request.asked_by_hook:
        metadata["asked_by_hook"] = request.asked_by_hook
    return metadata
