"""The Blitz agent: `Agent` implements `blitz.ports.AgentPort` on pydantic-ai.

`Agent.start` runs a turn from a prompt; `Agent.resume` continues a parked one from its
serialized history and the user's decisions and answers (parking.py checks and routes
them); `Agent.compact` summarises a history with one model call. A turn ends `Completed` or
`Parked`, both plain data, so nothing live is held across a park and any process may resume.

Here a turn's run is put together — the model from the pool, the tools the policy allows
(plan mode: only those that change nothing), the MCP servers for the run, the sub-agents it
may delegate to — and handed to the model loop (loop.py), which talks to the model through
`TurnIO` and retries failed calls. This module holds settings and the model pool only; it
must never drive the model itself, nor keep anything of a turn once the call returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    UserContent,
)
from pydantic_ai.models import Model
from pydantic_ai.tools import ToolApproved
from pydantic_ai.toolsets import AbstractToolset

from blitz.agent.compaction import compacted_history, summarise
from blitz.agent.delegation import delegation_toolset
from blitz.agent.deps import DEFAULT_COMMAND_ENV, FetchLimits, ToolDeps, ToolSettings
from blitz.agent.events import EventMapper
from blitz.agent.handoff import SubResume
from blitz.agent.ledger import usage_entry
from blitz.agent.loop import ModelLoop, RunStart
from blitz.agent.masking import ServerSecretsMasked
from blitz.agent.mcp_servers import McpConnections, McpServerSpec
from blitz.agent.models import ModelAccess, ModelPool, is_free
from blitz.agent.parking import (
    deferred_results,
    load_history,
    route_results,
    run_outcome,
    take_delegations,
)
from blitz.agent.retrying import RetryPolicy
from blitz.agent.sandbox import CommandSandbox, Isolation
from blitz.agent.subagents import RunShare, SubAgentRunner
from blitz.agent.tasks import TaskList
from blitz.agent.tools import workspace_toolset
from blitz.agent.window import HISTORY_TURNS, bounded_history, turn_starts
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.paths import Workspace
from blitz.ports.agent import Completed, Parked, Resolution, TurnIO, TurnPolicy
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["DEFAULT_INSTRUCTIONS", "PLAN_INSTRUCTIONS", "Agent", "check_images"]

DEFAULT_INSTRUCTIONS = (
    "You are a coding agent working in the user's workspace folder. Use the tools to look "
    "around, search, run commands and change files; paths are relative to the workspace. "
    "Prefer edit_file for small changes to existing files. Keep the user informed with the "
    "todo tool on longer tasks, and ask with ask_user when unsure."
)

PLAN_INSTRUCTIONS = (
    "Plan mode: do not change anything yet. Look around with the read-only tools, then "
    "propose a plan: call the todo tool once with the steps you would take, and end with a "
    "short explanation of the plan. The user will accept it before anything is carried out."
)


class Agent:
    """Runs turns; one instance serves any number of turns, concurrently.

    It holds settings and one model client per model name (so provider connections are
    pooled across turns); `async with Agent(...)` or `aclose()` closes those clients.
    """

    def __init__(
        self,
        *,
        command_timeout: float = 120.0,
        search_budget: float = 10.0,
        output_cap: int = 64 * 1024,
        command_env: Mapping[str, str] | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        tool_retries: int = 2,
        access: ModelAccess | None = None,
        retry: RetryPolicy | None = None,
        fetch: FetchLimits | None = None,
        sandbox: CommandSandbox | None = None,
        mcp_servers: tuple[McpServerSpec, ...] = (),
        history_turns: int = 100,
        models: Mapping[str, Model] | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        """
        Args:
            command_timeout: Seconds a `run_command` may take before it is killed.
            search_budget: Seconds a `search` may spend before it stops with what it found.
            output_cap: Bytes of command output (and of a read file or fetched page) kept
                for the model.
            command_env: The whole environment commands run with (HOME is always the
                workspace); a plain PATH and a UTF-8 locale by default.
            sandbox: What every command runs inside: its box, rlimits and cgroup bounds
                (sandbox.py); none by default (a process group only).
            history_turns: Turns of a session's history kept for the model (0: all); past
                it the oldest go, announced by a notice, so a turn's cost stays flat.
            instructions: The system instructions real models get.
            tool_retries: How often a model may retry a tool call with invalid arguments.
            access: Provider keys and base URLs (from settings); none by default.
            retry: Retries of failed model calls and their backoff.
            fetch: What fetch_url may reach and download.
            mcp_servers: MCP servers whose tools are offered (see mcp_servers.py).
            models: pydantic-ai models served by name as they are, before any name is
                resolved; the caller closes them.
            tracer_provider: Where pydantic-ai traces runs, model calls and tool calls
                (from the server's tracing settings); None: no spans.
        """
        self._settings = ToolSettings(
            command_timeout=command_timeout,
            search_budget=search_budget,
            output_cap=output_cap,
            command_env=dict(DEFAULT_COMMAND_ENV if command_env is None else command_env),
            fetch=fetch or FetchLimits(),
            sandbox=sandbox or CommandSandbox(),
        )
        self._mcp_servers = mcp_servers
        self._history_turns = history_turns
        # Built once: a toolset holds no state of a run, and building one (its tools' JSON
        # schemas) costs more than the rest of a turn's start. By plan mode.
        self._tools: dict[bool, AbstractToolset[ToolDeps]] = {
            plan: ServerSecretsMasked(workspace_toolset(plan=plan)) for plan in (False, True)
        }
        self._delegation = delegation_toolset()
        self._models = ModelPool(access or ModelAccess(), models)
        self._loop = ModelLoop(
            instructions=instructions,
            static_toolsets=[*self._tools.values(), self._delegation],
            tool_retries=tool_retries,
            retry=retry or RetryPolicy(),
            window_of=self._models.window_of,
            tracer_provider=tracer_provider,
        )

    @property
    def isolation(self) -> Isolation:
        """How far this agent's commands are kept from the server (sandbox.py)."""
        return self._settings.sandbox.isolation

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the provider clients of every model used so far."""
        await self._models.aclose()

    def validate_model(self, name: str) -> None:
        """Raise `BlitzError(INVALID_ARGUMENT, field=model)` unless `name` can be served."""
        self._models.get(name)

    async def start(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes | None,
        prompt: str,
        policy: TurnPolicy = TurnPolicy(),  # noqa: B008 - frozen, so one shared default is safe
    ) -> Completed | Parked:
        """Run a turn from `prompt`, after the session's `history` (None for the first turn)."""
        llm = self._models.get(model)
        user_prompt: str | list[UserContent] = prompt
        if policy.images:
            check_images(llm, policy)
            user_prompt = [
                prompt,
                *(BinaryContent(data=i.data, media_type=i.media_type) for i in policy.images),
            ]
        messages = load_history(history) if history else None
        return await self._converse(
            RunStart(messages=messages, prompt=user_prompt),
            io=io,
            model=model,
            llm=llm,
            workspace=workspace,
            policy=policy,
        )

    async def resume(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes,
        results: dict[str, Resolution],
        policy: TurnPolicy = TurnPolicy(),  # noqa: B008 - frozen, so one shared default is safe
    ) -> Completed | Parked:
        """Continue a parked turn with the resolutions of its requests, by request_id.

        Every open request must be resolved, each with its own kind of result (an answer
        for a question, a decision for an approval).
        """
        llm = self._models.get(model)
        messages = load_history(history)
        delegations = take_delegations(messages)
        routed = route_results(messages, results, delegations)
        deferred, overrides = deferred_results(routed.own, messages)
        for call_id, sub_results in routed.delegated.items():
            # The delegate call runs again, approved, and re-enters its sub-agent's run.
            deferred.approvals[call_id] = ToolApproved()
            deferred.metadata[call_id] = {
                "resume": SubResume(delegation=delegations[call_id], results=sub_results)
            }
        return await self._converse(
            RunStart(messages=messages, deferred=deferred),
            io=io,
            model=model,
            llm=llm,
            workspace=workspace,
            policy=policy,
            overrides=overrides,
            resumed=frozenset(routed.own) | set(routed.delegated),
        )

    async def compact(self, *, io: TurnIO, model: str, history: bytes) -> tuple[bytes, str]:
        """Summarise `history` with the model: the new, shorter history and the summary.

        One model call, through `io` like any other (it may be refused by
        `before_model_call`, it is retried like any other, and it is recorded in the ledger).
        """
        llm = self._models.get(model)
        messages = load_history(history)
        await io.before_model_call()
        calls = self._loop.model_calls(io=io, model=model)
        response = await calls.retried(lambda: summarise(llm, messages))
        await io.record_model_call(usage_entry(model, response, free=is_free(llm)))
        summary = response.text or ""
        if not summary.strip():
            raise BlitzError(
                Reason.MODEL_ERROR, "the model returned an empty summary", {"model": model}
            )
        return compacted_history(summary), summary

    async def _converse(
        self,
        start: RunStart,
        *,
        io: TurnIO,
        model: str,
        llm: Model,
        workspace: Path,
        policy: TurnPolicy,
        overrides: Mapping[str, dict[str, Any]] | None = None,
        resumed: frozenset[str] = frozenset(),
    ) -> Completed | Parked:
        """The main agent's run of a turn, with its MCP servers open while it lasts."""
        async with AsyncExitStack() as stack:
            toolsets: list[AbstractToolset[ToolDeps]] = [self._tools[policy.plan]]
            display_names: Mapping[str, str] = {}
            if self._mcp_servers and not policy.plan:
                mcp = await stack.enter_async_context(
                    McpConnections(self._mcp_servers, cwd=workspace, io=io, policy=policy)
                )
                toolsets.append(ServerSecretsMasked(mcp.toolset()))
                display_names = mcp.display_names
                for notice in mcp.notices():
                    io.emit(notice)
            share = RunShare(
                loop=self._loop,
                io=io,
                model=model,
                llm=llm,
                workspace=Workspace(workspace, resolved=True),  # the core opened it: real
                policy=policy,
                settings=self._settings,
                toolsets=tuple(toolsets),
                display_names=display_names,
            )
            messages: list[ModelMessage] = start.messages or []
            deps = share.deps(
                io,
                tasks=TaskList.from_history(messages),
                # Plan mode changes nothing, so it has nothing to hand over.
                subagents=None if policy.plan else SubAgentRunner(share),
            )
            result = await self._loop.run_to_end(
                start,
                model=model,
                llm=llm,
                deps=deps,
                mapper=EventMapper(
                    io, overrides=overrides, resumed=resumed, display_names=display_names
                ),
                toolsets=toolsets if policy.plan else [*toolsets, self._delegation],
                instructions=PLAN_INSTRUCTIONS if policy.plan else None,
            )
        outcome = run_outcome(result, display_names)
        if isinstance(outcome, Completed) and self._history_turns:
            outcome = self._bounded(outcome, io, result.all_messages())
        return outcome

    def _bounded(self, done: Completed, io: TurnIO, messages: list[ModelMessage]) -> Completed:
        """The completed turn with its session's history kept to `history_turns` turns."""
        kept, dropped = bounded_history(messages, max_turns=self._history_turns)
        if not dropped:
            return done
        io.emit(
            turn_pb2.TurnEvent(
                history_trimmed=turn_pb2.HistoryTrimmed(
                    dropped_messages=len(messages) - len(kept),
                    kept_turns=len(turn_starts(kept)),
                    reason=HISTORY_TURNS,
                )
            )
        )
        return Completed(output=done.output, history=ModelMessagesTypeAdapter.dump_json(kept))


def check_images(llm: Model, policy: TurnPolicy) -> None:
    """INVALID_ARGUMENT on `turn.image_ids` unless the model accepts images."""
    if not llm.profile.get("supports_image_input", True):
        raise invalid_argument(
            "turn.image_ids",
            f"the model {llm.model_name!r} does not accept images; "
            "choose a vision-capable model or send the turn without them",
            images=str(len(policy.images)),
        )
