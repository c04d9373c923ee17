"""The `delegate` tool: the main agent hands a task to a named sub-agent.

A sub-agent is the same model with the same workspace, tools, policy and `TurnIO` as the
agent that delegates to it, minus `delegate` itself (no further delegation). It runs inside
the `delegate` call (through `ToolDeps.subagents`, see subagents.py), and its final answer
is that call's result; its events are signed with its name and its ids made unique in the
turn: `<delegate call id>/<its own id>`.

When the sub-agent parks on an approval or a question, the whole turn must park and be
resumable from stored bytes alone, in any process. So the `delegate` call itself defers
(`ApprovalRequired`) with a `Delegation` — the sub-agent's serialized message history —
as its metadata; parking.py publishes the sub-agent's requests in its place and keeps the
`Delegation` in the parent's history. On resume the agent approves the `delegate` call
with a `SubResume` as its `tool_call_metadata`, and this tool re-enters the sub-agent's run
from that history. Nothing live crosses a park. The tool decides only who runs and with
what; it must never drive the model itself.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import FunctionToolset

from blitz.agent.deps import ToolDeps
from blitz.agent.handoff import Delegation, SubResume
from blitz.ports.agent import Parked

__all__ = ["agent_name", "delegate", "delegation_toolset"]

_NAME_MAX = 40
_SPACES = re.compile(r"\s+")


def agent_name(raw: str) -> str:
    """The name a sub-agent is shown with: one line, trimmed, at most 40 characters."""
    return _SPACES.sub(" ", raw).strip()[:_NAME_MAX].strip()


async def delegate(ctx: RunContext[ToolDeps], agent: str, task: str) -> dict[str, Any]:
    """Hand a self-contained task to a named sub-agent and get its final answer back.

    The sub-agent works in the same workspace with the same tools (approvals included) but
    sees none of this conversation: put everything it needs into `task`.

    Args:
        agent: A short name for the sub-agent (for example "tester"), shown to the user.
        task: The whole task: what to do, where, and what to report back.
    """
    deps = ctx.deps
    if deps.subagents is None:
        return {"error": "a sub-agent cannot delegate further: do the task yourself"}
    name = agent_name(agent)
    if not name:
        return {"error": "name the sub-agent: agent must not be empty"}
    call_id = ctx.tool_call_id or ""
    metadata = ctx.tool_call_metadata if ctx.tool_call_approved else None
    resume: SubResume | None = None
    if isinstance(metadata, dict) and isinstance(metadata.get("resume"), SubResume):
        # The turn parked on this sub-agent and is resumed: carry on where it stopped.
        resume = metadata["resume"]
        name, task_id = resume.delegation.agent, resume.delegation.task_id
    else:
        task_id = deps.tasks.current()
    outcome = await deps.subagents.hand_over(
        name, call_id=call_id, task_id=task_id, task=task, resume=resume
    )
    if isinstance(outcome, Parked):
        parked = Delegation(
            agent=name, task_id=task_id, history=outcome.history, requests=outcome.requests
        )
        raise ApprovalRequired({"delegation": parked})
    return {"agent": name, "output": outcome.output}


def delegation_toolset() -> FunctionToolset[ToolDeps]:
    """The `delegate` tool, offered to the main agent only."""
    return FunctionToolset[ToolDeps]([delegate])
