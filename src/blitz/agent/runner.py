"""The Blitz agent: one turn's conversation with the model and the tools, on pydantic-ai.

`Agent.start` runs a turn from a prompt; `Agent.resume` continues a parked one from its
serialized history and the user's decisions and answers. Either ends `Completed` or
`Parked`, both plain data, so nothing live is held across a park and any process may resume.
Every model request is preceded by `TurnIO.before_model_call` (which may stop the turn and
hands over steer text) and followed by `TurnIO.record_model_call`. The turn's `TurnPolicy`
decides which tools are offered (plan mode: only those that change nothing) and what the
policy gate lets through (see policy.py).

A model call that fails with a rate limit, a server error or a broken stream is retried
from the same history — the run restarts from the messages it had, so no tool runs twice —
after a transient `notice`; other provider errors become `BlitzError(MODEL_ERROR)` with the
provider's status, a too-long prompt `CONTEXT_OVERFLOW`. Cancellation propagates untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import AsyncExitStack
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
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import UsageLimits

from blitz.agent.compaction import compacted_history, summarise
from blitz.agent.contract import (
    AnswerResult,
    ApprovalResult,
    Completed,
    Parked,
    Resolution,
    TurnIO,
    TurnPolicy,
)
from blitz.agent.deps import DEFAULT_COMMAND_ENV, FetchLimits, ToolDeps
from blitz.agent.events import EventMapper
from blitz.agent.ledger import usage_entry
from blitz.agent.mcp_servers import McpConnections, McpServerSpec
from blitz.agent.models import ModelAccess, close_model, context_window, is_free, resolve_model
from blitz.agent.retrying import RetryPolicy, classify, model_error, retry_notice
from blitz.agent.tools import QUESTION_TOOL, workspace_toolset
from blitz.agent.window import window_processor
from blitz.agent.workspace import Workspace
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.v1 import turn_pb2

__all__ = ["DEFAULT_INSTRUCTIONS", "PLAN_INSTRUCTIONS", "Agent"]

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
        results = current_results(messages, results)
        deferred = DeferredToolResults()
        overrides: dict[str, dict[str, Any]] = {}
        for request_id, resolution in results.items():
            if isinstance(resolution, ApprovalResult):
                if not resolution.approved:
                    deferred.approvals[request_id] = ToolDenied(
                        resolution.reason or "The user denied this action."
                    )
                elif resolution.command:
                    # Only run_command has a command to replace (the core allows it only on
                    # COMMAND approvals); the tool then runs what the user wrote.
                    overrides[request_id] = {"command": resolution.command}
                    deferred.approvals[request_id] = ToolApproved(
                        override_args=overrides[request_id]
                    )
                else:
                    deferred.approvals[request_id] = True
            elif isinstance(resolution, AnswerResult):
                deferred.calls[request_id] = {
                    "answers": list(resolution.answers),
                    **({} if resolution.answers else {"note": "no answer came in time"}),
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
            mapper=EventMapper(io, overrides=overrides, resumed=frozenset(results)),
        )

    async def compact(self, *, io: TurnIO, model: str, history: bytes) -> tuple[bytes, str]:
        """Summarise `history` with the model: the new, shorter history and the summary.

        One model call, through `io` like any other (it may be refused by
        `before_model_call`, and it is recorded in the ledger).
        """
        llm = self._model(model)
        messages = load_history(history)
        await io.before_model_call()
        try:
            response = await summarise(llm, messages)
        except ModelAPIError as exc:
            raise model_error(exc, model=model) from exc
        except UnexpectedModelBehavior as exc:
            raise BlitzError(
                Reason.MODEL_ERROR, f"the model failed: {exc}", {"model": model}
            ) from exc
        await io.record_model_call(usage_entry(model, response, free=is_free(llm)))
        summary = response.text or ""
        if not summary.strip():
            raise BlitzError(
                Reason.MODEL_ERROR, "the model returned an empty summary", {"model": model}
            )
        return compacted_history(summary), summary

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
        mapper: EventMapper | None = None,
    ) -> Completed | Parked:
        free = is_free(llm)
        mapper = mapper or EventMapper(io)
        agent = self._agent
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
            mapper.set_names(names)
            deps = ToolDeps(
                io=io,
                workspace=Workspace(workspace),
                command_timeout=self._command_timeout,
                output_cap=self._output_cap,
                command_env=self._command_env,
                policy=policy,
                fetch=self._fetch,
                display_names=names,
            )
            extra = PLAN_INSTRUCTIONS if policy.plan else None
            # A retried call runs again from the history it had; before_model_call was
            # already called for it.
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
                        instructions=extra,
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
                    if classify(exc) != "retry" or attempt > self._retry.retries:
                        raise model_error(exc, model=model, attempts=attempt) from exc
                    if run is not None:
                        sent = list(run.ctx.state.message_history)
                        if sent and isinstance(sent[-1], ModelRequest):
                            # Everything up to the failed request, tool results included.
                            messages, prompt, deferred = sent, None, None
                    delay = self._retry.delay(attempt, exc.retry_after)
                    io.emit(
                        turn_pb2.TurnEvent(
                            notice=turn_pb2.Notice(
                                text=retry_notice(
                                    exc, delay=delay, attempt=attempt, retries=self._retry.retries
                                ),
                                transient=True,
                            )
                        )
                    )
                    mapper.restart()
                    retried = True
                    await asyncio.sleep(delay)
                except UnexpectedModelBehavior as exc:
                    raise BlitzError(
                        Reason.MODEL_ERROR, f"the model failed: {exc}", {"model": model}
                    ) from exc
        if result is None:  # pragma: no cover - iter() always ends with a result
            raise RuntimeError("agent run ended without a result")
        history = result.all_messages_json()
        output = result.output
        if isinstance(output, DeferredToolRequests):
            return Parked(history=history, requests=park_requests(output, names))
        return Completed(output=output, history=history)


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


def current_results(
    messages: list[ModelMessage], results: Mapping[str, Resolution]
) -> dict[str, Resolution]:
    """The results that resolve the parked response's open requests, checked.

    Results for requests an earlier park of the turn already settled are dropped (the core
    may hand over every resolution of the turn); ids never asked for are REQUEST_NOT_FOUND;
    an open request left unresolved, or resolved with the wrong kind of result, is
    INVALID_ARGUMENT on `results`.
    """
    open_calls = pending_calls(messages)
    current: dict[str, Resolution] = {}
    earlier: set[str] | None = None
    for request_id, resolution in results.items():
        tool = open_calls.get(request_id)
        if tool is None:
            if earlier is None:
                earlier = all_call_ids(messages)
            if request_id in earlier:
                continue
            raise BlitzError(
                Reason.REQUEST_NOT_FOUND,
                "no such request in this turn",
                {"request_id": request_id},
            )
        # A question's tool is ask_user; every other deferred call is an approval.
        if (tool == QUESTION_TOOL) != isinstance(resolution, AnswerResult):
            needs = "an answer" if tool == QUESTION_TOOL else "a decision"
            raise invalid_argument(
                "results", f"request {request_id} needs {needs}", request_id=request_id
            )
        current[request_id] = resolution
    for request_id in open_calls:
        if request_id not in current:
            raise invalid_argument(
                "results", f"request {request_id} is not resolved", request_id=request_id
            )
    return current


def all_call_ids(messages: list[ModelMessage]) -> set[str]:
    return {
        part.tool_call_id
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


def pending_calls(messages: list[ModelMessage]) -> dict[str, str]:
    """The tool calls of the last model response that have no result yet: id -> tool name."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return {
                part.tool_call_id: part.tool_name
                for part in message.parts
                if isinstance(part, ToolCallPart) and part.tool_call_id not in answered
            }
        # Results that came back in the same step as the park (tools that needed nobody).
        answered.update(p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart))
    return {}


def load_history(data: bytes) -> list[ModelMessage]:
    """A session history as `start`/`resume` receive it (pydantic-ai's JSON messages)."""
    try:
        return ModelMessagesTypeAdapter.validate_json(data)
    except ValueError as exc:
        raise invalid_argument("history", "the stored message history is unreadable") from exc


def park_requests(
    requests: DeferredToolRequests, names: Mapping[str, str] | None = None
) -> list[turn_pb2.TurnEvent]:
    """One `approval_request` or `question` event per open deferred call, in call order."""
    names = names or {}
    events: list[turn_pb2.TurnEvent] = []
    for call in requests.approvals:
        meta = requests.metadata.get(call.tool_call_id, {})
        events.append(
            turn_pb2.TurnEvent(
                approval_request=turn_pb2.ApprovalRequest(
                    request_id=call.tool_call_id,
                    tool=names.get(call.tool_name, call.tool_name),
                    kind=meta.get("kind", turn_pb2.ACTION_KIND_UNSPECIFIED),
                    detail=meta.get("detail") or call.args_as_json_str(),
                    diff=meta.get("diff", ""),
                    scope_label=meta.get("scope_label") or f"tool: {call.tool_name}",
                )
            )
        )
    for call in requests.calls:
        meta = requests.metadata.get(call.tool_call_id, {})
        events.append(
            turn_pb2.TurnEvent(
                question=turn_pb2.Question(
                    request_id=call.tool_call_id,
                    question=meta.get("question") or call.args_as_json_str(),
                    options=meta.get("options", []),
                    multi_select=bool(meta.get("multi_select", False)),
                )
            )
        )
    return events
