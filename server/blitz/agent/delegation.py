"""Handing a task to a named sub-agent: the `delegate` tool and how its parked run travels.

A sub-agent is the same model with the same workspace, tools, policy and `TurnIO` as the
agent that delegates to it, minus `delegate` itself (no further delegation). It runs inside
the `delegate` tool call, and its final answer is that call's result. What it emits goes
through `SubAgentIO`, which signs every event with its name (`author`) and makes its tool
call ids — hence its request ids — unique in the turn: `<delegate call id>/<its own id>`.

When the sub-agent parks on an approval or a question, the whole turn must park and be
resumable from stored bytes alone, in any process. So the `delegate` call itself defers
(`ApprovalRequired`) with a `Delegation` — the sub-agent's serialized message history —
as its metadata; the runner publishes the sub-agent's requests in its place and keeps the
`Delegation` in the parent's history (see parking.py). On resume the runner approves the
`delegate` call with the sub-agent's results as its `tool_call_metadata`, and the tool
re-enters the sub-agent's run from that history. Nothing live crosses a park.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic_core
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.toolsets import FunctionToolset

from blitz.agent.deps import ToolDeps
from blitz.ports.agent import (
    Completed,
    ModelCallUsage,
    Parked,
    Resolution,
    TurnIO,
)
from blitz.v1 import turn_pb2

__all__ = [
    "DELEGATE_TOOL",
    "Delegation",
    "SubAgentIO",
    "SubAgents",
    "SubResume",
    "delegation_toolset",
]

DELEGATE_TOOL = "delegate"
# Between the delegate call's id and the sub-agent's own call id in a request id.
ID_SEPARATOR = "/"

_NAME_MAX = 40
_SPACES = re.compile(r"\s+")


@dataclass
class Delegation:
    """A sub-agent's parked run, as the parent's history keeps it while the turn is parked."""

    agent: str
    # The parent's current task when it delegated: the sub-agent's task when it has none.
    task_id: str
    # The sub-agent's message history (pydantic-ai JSON).
    history: bytes
    # Its open requests as clients see them; in-process only, never stored.
    requests: list[turn_pb2.TurnEvent] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "task_id": self.task_id,
            # Kept as JSON, not a string of it, so the stored history stays readable.
            "history": pydantic_core.from_json(self.history),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Delegation:
        return cls(
            agent=str(data["agent"]),
            task_id=str(data.get("task_id", "")),
            history=pydantic_core.to_json(data["history"]),
        )


@dataclass
class SubResume:
    """What a resumed `delegate` call gets as its `tool_call_metadata`."""

    delegation: Delegation
    # By the sub-agent's own call ids.
    results: dict[str, Resolution]


class SubAgents(Protocol):
    """Runs sub-agents for one agent run (implemented by the runner)."""

    async def run(
        self,
        name: str,
        *,
        call_id: str,
        task_id: str,
        task: str = "",
        resume: SubResume | None = None,
    ) -> Completed | Parked:
        """Start the sub-agent on `task`, or continue its parked run with `resume`.

        A `Parked` outcome's requests are as clients see them (ids, agent, author set).
        """
        ...


class SubAgentIO:
    """The `TurnIO` a sub-agent runs with: the parent's, with its events signed and ids made
    unique in the turn."""

    def __init__(self, io: TurnIO, *, name: str, call_id: str) -> None:
        self._io = io
        self.name = name
        self.prefix = call_id + ID_SEPARATOR

    def claim(self, event: turn_pb2.TurnEvent) -> turn_pb2.TurnEvent:
        """Sign `event` with the sub-agent's name and give its ids the turn-wide form."""
        if not event.author:
            # run_command's live output keeps its own author, as for the main agent.
            event.author = self.name
        kind = event.WhichOneof("kind")
        if kind == "tool_call" and event.tool_call.id:
            event.tool_call.id = self.prefix + event.tool_call.id
        elif kind == "tool_result":
            event.tool_result.id = self.prefix + event.tool_result.id
        elif kind == "approval_request":
            self._request(event.approval_request)
        elif kind == "question":
            event.question.request_id = self.prefix + event.question.request_id
            event.question.agent = self.name
        return event

    def emit(self, event: turn_pb2.TurnEvent) -> None:
        self._io.emit(self.claim(event))

    async def commit(self, event: turn_pb2.TurnEvent) -> None:
        await self._io.commit(self.claim(event))

    async def before_model_call(self) -> list[str]:
        # Steer text goes to whoever calls the model next: while it works, the sub-agent.
        return await self._io.before_model_call()

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        await self._io.record_model_call(usage)

    async def rule_approves(self, approval: turn_pb2.ApprovalRequest) -> bool:
        self._request(approval)
        return await self._io.rule_approves(approval)

    def _request(self, approval: turn_pb2.ApprovalRequest) -> None:
        approval.request_id = self.prefix + approval.request_id
        approval.agent = self.name


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
    outcome = await deps.subagents.run(
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
