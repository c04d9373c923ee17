"""Sub-agents: what one run of a turn shares with them, and how each of them runs.

`RunShare` is what the main agent's run hands down, built once per run by agent.py: the
model loop, the turn's `TurnIO`, model, workspace, policy, tool settings and tool belt
(without `delegate`: a sub-agent cannot delegate further). From it `SubAgentRunner` — the
`SubAgents` the `delegate` tool calls — runs a sub-agent through the same model loop as the
main agent, with its own task list, instructions and a `SubAgentIO`: the parent's `TurnIO`
with every event signed with the sub-agent's name (`author`) and its tool call ids — hence
its request ids — made unique in the turn (`<delegate call id>/<its own id>`).

A sub-agent that parks parks the whole turn: its outcome goes back to the `delegate` call,
which defers with it (delegation.py). This module keeps nothing between calls and must
never hold a sub-agent's run across a park.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.toolsets import AbstractToolset

from blitz.agent.deps import ToolDeps, ToolSettings
from blitz.agent.events import EventMapper
from blitz.agent.handoff import ID_SEPARATOR, SubAgents, SubResume
from blitz.agent.loop import ModelLoop, RunStart
from blitz.agent.parking import deferred_results, load_history, run_outcome
from blitz.agent.tasks import TaskList
from blitz.paths import Workspace
from blitz.ports.agent import (
    AnswerResult,
    Completed,
    HookVerdict,
    ModelCallUsage,
    Parked,
    RuleDecision,
    TurnIO,
    TurnPolicy,
)
from blitz.v1 import turn_pb2

__all__ = ["SUBAGENT_INSTRUCTIONS", "RunShare", "SubAgentIO", "SubAgentRunner"]

SUBAGENT_INSTRUCTIONS = (
    "You are the sub-agent {name!r}. The main agent handed you the task in the prompt; you "
    "see nothing else of its conversation. Do the task with the tools, then end with a short "
    "report of what you did and found: it goes back to the main agent, not to the user."
)


@dataclass(frozen=True)
class RunShare:
    """What one run of a turn shares with the sub-agents it delegates to."""

    loop: ModelLoop
    io: TurnIO
    # The session's name for the model (the ledger's), and the model itself.
    model: str
    llm: Model
    workspace: Workspace
    policy: TurnPolicy
    settings: ToolSettings
    # The tool belt without `delegate`.
    toolsets: tuple[AbstractToolset[ToolDeps], ...]
    # Model-facing tool names that users see differently (MCP tools).
    display_names: Mapping[str, str]

    def deps(
        self,
        io: TurnIO,
        *,
        tasks: TaskList,
        agent: str = "",
        subagents: SubAgents | None = None,
    ) -> ToolDeps:
        """The tools' deps for a run of this turn by `agent` ("" for the main agent)."""
        return ToolDeps(
            io=io,
            workspace=self.workspace,
            settings=self.settings,
            policy=self.policy,
            display_names=self.display_names,
            tasks=tasks,
            agent=agent,
            subagents=subagents,
        )


class SubAgentRunner:
    """Runs the sub-agents of one run: same model, workspace, tools, policy and TurnIO."""

    def __init__(self, share: RunShare) -> None:
        self._share = share

    async def hand_over(
        self,
        name: str,
        *,
        call_id: str,
        task_id: str,
        task: str = "",
        resume: SubResume | None = None,
    ) -> Completed | Parked:
        """Start the sub-agent `name` on `task`, or continue its parked run with `resume`."""
        share = self._share
        io = SubAgentIO(share.io, name=name, call_id=call_id)
        messages: list[ModelMessage] | None = None
        if resume is None:
            start = RunStart(prompt=task)
            mapper = EventMapper(io, display_names=share.display_names)
        else:
            messages = load_history(resume.delegation.history)
            deferred, overrides = deferred_results(resume.results, messages)
            start = RunStart(messages=messages, deferred=deferred)
            mapper = EventMapper(
                io,
                overrides=overrides,
                resumed=frozenset(resume.results),
                display_names=share.display_names,
            )
        deps = share.deps(
            io,
            tasks=TaskList.from_history(messages or [], prefix=f"{name}.", fallback=task_id),
            agent=name,
        )
        result = await share.loop.run_to_end(
            start,
            model=share.model,
            llm=share.llm,
            deps=deps,
            mapper=mapper,
            toolsets=share.toolsets,
            instructions=SUBAGENT_INSTRUCTIONS.format(name=name),
        )
        outcome = run_outcome(result, share.display_names)
        if isinstance(outcome, Parked):
            outcome.requests = [io.claim(event) for event in outcome.requests]
        return outcome


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
            event.author = self.name
        kind = event.WhichOneof("kind")
        if kind == "tool_call" and event.tool_call.id:
            event.tool_call.id = self.prefix + event.tool_call.id
        elif kind == "tool_result":
            event.tool_result.id = self.prefix + event.tool_result.id
        elif kind == "tool_output":
            event.tool_output.id = self.prefix + event.tool_output.id
        elif kind == "file_changed" and event.file_changed.tool_call_id:
            event.file_changed.tool_call_id = self.prefix + event.file_changed.tool_call_id
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

    async def pace(self) -> None:
        await self._io.pace()

    async def before_model_call(self) -> list[str]:
        # Steer text goes to whoever calls the model next: while it works, the sub-agent.
        return await self._io.before_model_call()

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        await self._io.record_model_call(usage)

    async def before_change(self) -> None:
        await self._io.before_change()

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        await self._io.before_file_change(path, content)

    async def rule_decides(self, approval: turn_pb2.ApprovalRequest) -> RuleDecision | None:
        self._request(approval)
        return await self._io.rule_decides(approval)

    async def pre_tool(
        self,
        approval: turn_pb2.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str] = frozenset(),
    ) -> HookVerdict | None:
        self._request(approval)
        return await self._io.pre_tool(approval, tool_input, rewritable=rewritable)

    async def ask_now(self, question: turn_pb2.Question) -> AnswerResult:
        asked = self.claim(turn_pb2.TurnEvent(question=question)).question
        return await self._io.ask_now(asked)

    def _request(self, approval: turn_pb2.ApprovalRequest) -> None:
        approval.request_id = self.prefix + approval.request_id
        approval.agent = self.name
