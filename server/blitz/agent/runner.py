"""The Blitz agent: one turn's conversation with the model and the tools, on pydantic-ai.

`Agent.start` runs a turn from a prompt; `Agent.resume` continues a parked one from its
serialized history and the user's decisions and answers. Either ends `Completed` or
`Parked`, both plain data, so nothing live is held across a park and any process may resume.
Every model request is preceded by `TurnIO.before_model_call` (which may stop the turn and
hands over steer text) and followed by `TurnIO.record_model_call`. The turn's `TurnPolicy`
decides which tools are offered (plan mode: only those that change nothing) and what the
policy gate lets through (see policy.py).

The main agent may hand a task to a named sub-agent (`delegate`, see delegation.py): the
same model, workspace, tools, policy and `TurnIO`, run inside the `delegate` call through
the same model loop (`_drive`). A sub-agent that parks parks the whole turn; its run travels
inside the parent's parked history and is re-entered on resume (see parking.py).

A model call that fails with a rate limit, a server error or a broken stream is retried
from the same history — the run restarts from the messages it had, so no tool runs twice —
after a transient `notice`; other provider errors become `BlitzError(MODEL_ERROR)` with the
provider's status, a too-long prompt `CONTEXT_OVERFLOW`. Cancellation propagates untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai import Agent as _PydanticAgent
from pydantic_ai import RunContext
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import UsageLimits

from blitz.agent.compaction import compacted_history, summarise
from blitz.agent.delegation import SubAgentIO, SubAgents, SubResume, delegation_toolset
from blitz.agent.deps import DEFAULT_COMMAND_ENV, FetchLimits, ToolDeps
from blitz.agent.events import EventMapper
from blitz.agent.ledger import usage_entry
from blitz.agent.mcp_servers import McpConnections, McpServerSpec
from blitz.agent.models import ModelAccess, close_model, context_window, is_free, resolve_model
from blitz.agent.parking import (
    deferred_results,
    keep_delegations,
    load_history,
    park_requests,
    route_results,
    take_delegations,
)
from blitz.agent.retrying import (
    RetryPolicy,
    classify,
    misbehaviour_error,
    model_error,
    retry_notice,
)
from blitz.agent.tasks import TaskList
from blitz.agent.tools import workspace_toolset
from blitz.agent.window import window_processor
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.paths import Workspace
from blitz.ports.agent import Completed, Parked, Resolution, TurnIO, TurnPolicy
from blitz.v1 import turn_pb2

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "PLAN_INSTRUCTIONS",
    "SUBAGENT_INSTRUCTIONS",
    "Agent",
]

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

SUBAGENT_INSTRUCTIONS = (
    "You are the sub-agent {name!r}. The main agent handed you the task in the prompt; you "
    "see nothing else of its conversation. Do the task with the tools, then end with a short "
    "report of what you did and found: it goes back to the main agent, not to the user."
)

# The core counts model calls (max_turns) through before_model_call; pydantic-ai's own
# default cap of 50 requests would end long turns behind its back.
_NO_LIMITS = UsageLimits(request_limit=None)

_Output = str | DeferredToolRequests


class Agent:
    """Runs turns; one instance serves any number of turns, concurrently.

    It holds settings and one model client per model name (so provider connections are
    pooled across turns); `async with Agent(...)` or `aclose()` closes those clients.
    """

    def __init__(
        self,
        *,
        command_timeout: float = 120.0,
        output_cap: int = 64 * 1024,
        command_env: Mapping[str, str] | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        tool_retries: int = 2,
        access: ModelAccess | None = None,
        retry: RetryPolicy | None = None,
        fetch: FetchLimits | None = None,
        mcp_servers: tuple[McpServerSpec, ...] = (),
    ) -> None:
        """
        Args:
            command_timeout: Seconds a `run_command` may take before it is killed.
            output_cap: Bytes of command output (and of a read file or fetched page) kept
                for the model.
            command_env: The whole environment commands run with (HOME is always the
                workspace); a plain PATH and a UTF-8 locale by default.
            instructions: The system instructions real models get.
            tool_retries: How often a model may retry a tool call with invalid arguments.
            access: Provider keys and base URLs (from settings); none by default.
            retry: Retries of failed model calls and their backoff.
            fetch: What fetch_url may reach and download.
            mcp_servers: MCP servers whose tools are offered (see mcp_servers.py).
        """
        self._command_timeout = command_timeout
        self._output_cap = output_cap
        self._command_env = dict(DEFAULT_COMMAND_ENV if command_env is None else command_env)
        self._access = access or ModelAccess()
        self._retry = retry or RetryPolicy()
        self._fetch = fetch or FetchLimits()
        self._mcp_servers = mcp_servers
        self._windows: dict[int, int | None] = {}
        self._models: dict[str, Model] = {}
        self._agent = _PydanticAgent[ToolDeps, _Output](
            output_type=[str, DeferredToolRequests],
            deps_type=ToolDeps,
            instructions=instructions,
            retries=tool_retries,
            capabilities=[ProcessHistory(window_processor(self._window_of))],
        )

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the provider clients of every model used so far."""
        models, self._models = list(self._models.values()), {}
        for model in models:
            await close_model(model)

    def validate_model(self, name: str) -> None:
        """Raise `BlitzError(INVALID_ARGUMENT, field=model)` unless `name` can be served."""
        self._model(name)

    def _model(self, name: str) -> Model:
        model = self._models.get(name)
        if model is None:
            model = self._models[name] = resolve_model(name, self._access)
        return model

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
        llm = self._model(model)
        user_prompt: str | list[UserContent] = prompt
        if policy.images:
            check_images(llm, policy)
            user_prompt = [
                prompt,
                *(BinaryContent(data=i.data, media_type=i.media_type) for i in policy.images),
            ]
        messages = load_history(history) if history else None
        return await self._run(
            io=io,
            model=model,
            llm=llm,
            workspace=workspace,
            messages=messages,
            prompt=user_prompt,
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
        llm = self._model(model)
        messages = load_history(history)
        delegations = take_delegations(messages)
        routed = route_results(messages, results, delegations)
        deferred, overrides = deferred_results(routed.own)
        for call_id, sub_results in routed.delegated.items():
            # The delegate call runs again, approved, and re-enters its sub-agent's run.
            deferred.approvals[call_id] = ToolApproved()
            deferred.metadata[call_id] = {
                "resume": SubResume(delegation=delegations[call_id], results=sub_results)
            }
        return await self._run(
            io=io,
            model=model,
            llm=llm,
            workspace=workspace,
            messages=messages,
            prompt=None,
            policy=policy,
            deferred=deferred,
            overrides=overrides,
            resumed=frozenset(routed.own) | set(routed.delegated),
        )

    async def compact(self, *, io: TurnIO, model: str, history: bytes) -> tuple[bytes, str]:
        """Summarise `history` with the model: the new, shorter history and the summary.

        One model call, through `io` like any other (it may be refused by
        `before_model_call`, and it is recorded in the ledger).
        """
        llm = self._model(model)
        messages = load_history(history)
        await io.before_model_call()
        attempt = 0
        while True:
            try:
                response = await summarise(llm, messages)
                break
            except ModelAPIError as exc:
                attempt += 1
                await asyncio.sleep(self._retry_delay(exc, attempt, io=io, model=model))
            except UnexpectedModelBehavior as exc:
                raise misbehaviour_error(exc, model=model) from exc
        await io.record_model_call(usage_entry(model, response, free=is_free(llm)))
        summary = response.text or ""
        if not summary.strip():
            raise BlitzError(
                Reason.MODEL_ERROR, "the model returned an empty summary", {"model": model}
            )
        return compacted_history(summary), summary

    def _retry_delay(self, exc: ModelAPIError, attempt: int, *, io: TurnIO, model: str) -> float:
        """How long to wait before retry `attempt` of a failed model call, told to the client.

        Raises the turn's MODEL_ERROR instead when the failure is not worth retrying, or
        the retries are spent.
        """
        if classify(exc) != "retry" or attempt > self._retry.retries:
            raise model_error(exc, model=model, attempts=attempt) from exc
        delay = self._retry.delay(attempt, exc.retry_after)
        text = retry_notice(exc, delay=delay, attempt=attempt, retries=self._retry.retries)
        io.emit(turn_pb2.TurnEvent(notice=turn_pb2.Notice(text=text, transient=True)))
        return delay

    def _window_of(self, ctx: RunContext[ToolDeps]) -> int | None:
        model = ctx.model
        key = id(model)
        if key not in self._windows:
            self._windows[key] = context_window(model, self._access)
        return self._windows[key]

    async def _run(
        self,
        *,
        io: TurnIO,
        model: str,
        llm: Model,
        workspace: Path,
        messages: list[ModelMessage] | None,
        prompt: str | list[UserContent] | None,
        policy: TurnPolicy,
        deferred: DeferredToolResults | None = None,
        overrides: Mapping[str, dict[str, Any]] | None = None,
        resumed: frozenset[str] = frozenset(),
    ) -> Completed | Parked:
        async with AsyncExitStack() as stack:
            toolsets: list[AbstractToolset[ToolDeps]] = [workspace_toolset(plan=policy.plan)]
            names: dict[str, str] = {}
            if self._mcp_servers and not policy.plan:
                mcp = await stack.enter_async_context(
                    McpConnections(self._mcp_servers, cwd=workspace)
                )
                toolsets.append(mcp.toolset())
                names = mcp.display_names
                for server, why in mcp.failures.items():
                    io.emit(
                        turn_pb2.TurnEvent(
                            notice=turn_pb2.Notice(
                                text=f"MCP server {server} is unavailable: {why}", error=True
                            )
                        )
                    )
            setup = _RunSetup(
                agent=self,
                io=io,
                model=model,
                llm=llm,
                workspace=Workspace(workspace),
                policy=policy,
                toolsets=toolsets,
                names=names,
            )
            deps = setup.deps(
                io,
                tasks=TaskList.from_history(messages or []),
                # Plan mode changes nothing, so it has nothing to hand over.
                subagents=None if policy.plan else _SubAgents(setup),
            )
            result = await self._drive(
                setup,
                deps=deps,
                messages=messages,
                prompt=prompt,
                deferred=deferred,
                mapper=EventMapper(io, overrides=overrides, resumed=resumed, names=names),
                toolsets=toolsets if policy.plan else [*toolsets, delegation_toolset()],
                instructions=PLAN_INSTRUCTIONS if policy.plan else None,
            )
        return _outcome(result, names)

    async def _drive(
        self,
        setup: _RunSetup,
        *,
        deps: ToolDeps,
        messages: list[ModelMessage] | None,
        prompt: str | list[UserContent] | None,
        deferred: DeferredToolResults | None,
        mapper: EventMapper,
        toolsets: list[AbstractToolset[ToolDeps]],
        instructions: str | None,
    ) -> AgentRunResult[_Output]:
        """One pydantic-ai run to its end, model calls through `TurnIO`, retried as needed."""
        io, model, llm = deps.io, setup.model, setup.llm
        free = is_free(llm)
        agent = self._agent
        # A retried call runs again from the history it had; before_model_call was already
        # called for it.
        retried = False
        attempt = 0
        while True:
            run = None
            try:
                async with agent.iter(
                    prompt,
                    message_history=messages,
                    deferred_tool_results=deferred,
                    model=llm,
                    deps=deps,
                    usage_limits=_NO_LIMITS,
                    toolsets=toolsets,
                    instructions=instructions,
                ) as run:
                    async for node in run:
                        if agent.is_model_request_node(node):
                            if retried:
                                retried = False
                            else:
                                steer = await io.before_model_call()
                                if steer:
                                    add_user_text(node.request, steer)
                            async with node.stream(run.ctx) as stream:
                                async for event in stream:
                                    mapper.model_event(event)
                            mapper.response_done()
                            attempt = 0
                            await io.record_model_call(
                                usage_entry(model, stream.response, free=free)
                            )
                        elif agent.is_call_tools_node(node):
                            async with node.stream(run.ctx) as tool_stream:
                                async for tool_event in tool_stream:
                                    mapper.tool_event(tool_event)
                    result = run.result
                break
            except ModelAPIError as exc:
                attempt += 1
                delay = self._retry_delay(exc, attempt, io=io, model=model)
                if run is not None:
                    sent = list(run.ctx.state.message_history)
                    if sent and isinstance(sent[-1], ModelRequest):
                        # Everything up to the failed request, tool results included.
                        messages, prompt, deferred = sent, None, None
                mapper.restart()
                retried = True
                await asyncio.sleep(delay)
            except UnexpectedModelBehavior as exc:
                raise misbehaviour_error(exc, model=model) from exc
        if result is None:  # pragma: no cover - iter() always ends with a result
            raise RuntimeError("agent run ended without a result")
        return result


@dataclass(frozen=True)
class _RunSetup:
    """What one run of a turn shares with the sub-agents it delegates to."""

    agent: Agent
    io: TurnIO
    model: str
    llm: Model
    workspace: Workspace
    policy: TurnPolicy
    # The tool belt without `delegate`.
    toolsets: list[AbstractToolset[ToolDeps]]
    names: Mapping[str, str]

    def deps(
        self,
        io: TurnIO,
        *,
        tasks: TaskList,
        agent: str = "",
        subagents: SubAgents | None = None,
    ) -> ToolDeps:
        settings = self.agent
        return ToolDeps(
            io=io,
            workspace=self.workspace,
            command_timeout=settings._command_timeout,
            output_cap=settings._output_cap,
            command_env=settings._command_env,
            policy=self.policy,
            fetch=settings._fetch,
            display_names=self.names,
            tasks=tasks,
            agent=agent,
            subagents=subagents,
        )


class _SubAgents:
    """Runs the sub-agents of one run: same model, workspace, tools, policy and TurnIO."""

    def __init__(self, setup: _RunSetup) -> None:
        self._setup = setup

    async def run(
        self,
        name: str,
        *,
        call_id: str,
        task_id: str,
        task: str = "",
        resume: SubResume | None = None,
    ) -> Completed | Parked:
        setup = self._setup
        io = SubAgentIO(setup.io, name=name, call_id=call_id)
        messages: list[ModelMessage] | None = None
        prompt: str | None = task
        deferred: DeferredToolResults | None = None
        if resume is None:
            mapper = EventMapper(io, names=setup.names)
        else:
            messages, prompt = load_history(resume.delegation.history), None
            deferred, overrides = deferred_results(resume.results)
            mapper = EventMapper(
                io, overrides=overrides, resumed=frozenset(resume.results), names=setup.names
            )
        deps = setup.deps(
            io,
            tasks=TaskList.from_history(messages or [], prefix=f"{name}.", fallback=task_id),
            agent=name,
        )
        result = await setup.agent._drive(
            setup,
            deps=deps,
            messages=messages,
            prompt=prompt,
            deferred=deferred,
            mapper=mapper,
            toolsets=setup.toolsets,
            instructions=SUBAGENT_INSTRUCTIONS.format(name=name),
        )
        outcome = _outcome(result, setup.names)
        if isinstance(outcome, Parked):
            outcome.requests = [io.claim(event) for event in outcome.requests]
        return outcome


def _outcome(result: AgentRunResult[_Output], names: Mapping[str, str]) -> Completed | Parked:
    """How a run ended, as plain data; a parked one keeps its parked sub-agents' runs."""
    output = result.output
    if not isinstance(output, DeferredToolRequests):
        return Completed(output=output, history=result.all_messages_json())
    requests, delegations = park_requests(output, names)
    messages = result.all_messages()
    if delegations:
        keep_delegations(messages, delegations)
    return Parked(history=ModelMessagesTypeAdapter.dump_json(messages), requests=requests)


def check_images(llm: Model, policy: TurnPolicy) -> None:
    """INVALID_ARGUMENT on `turn.image_ids` unless the model accepts images."""
    if not llm.profile.get("supports_image_input", True):
        raise invalid_argument(
            "turn.image_ids",
            f"the model {llm.model_name!r} does not accept images; "
            "choose a vision-capable model or send the turn without them",
            images=str(len(policy.images)),
        )


def add_user_text(request: ModelRequest, texts: list[str]) -> None:
    """Append steer texts to the request a node is about to send (and history will keep)."""
    extra = [UserPromptPart(text) for text in texts]
    if isinstance(request.parts, list):
        # pydantic-ai keeps the very list it was given; extend it where it lives.
        request.parts.extend(extra)
    else:
        request.parts = [*request.parts, *extra]
