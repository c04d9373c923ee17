"""The model loop: one pydantic-ai run to its end, and the retry of failed model calls.

`ModelLoop.run_to_end` iterates one run — the main agent's or a sub-agent's — node by node.
Before every model request it calls `TurnIO.before_model_call` (which may stop the turn,
and hands over steer text that is added to the request); it streams the response into the
`EventMapper`, records the call with `TurnIO.record_model_call`, and streams the tool step.

`ModelCalls` is the one place a failed model call is retried, for runs and for the single
call of a compaction alike: retrying.py classifies the failure; a rate limit, a server
error or a broken stream is retried after a transient `notice` and a backoff, anything else
— or the last failed try — fails the turn with `BlitzError(MODEL_ERROR)` (a too-long prompt
`CONTEXT_OVERFLOW`). A retried run restarts from the messages it had sent, so no tool runs
twice, and `before_model_call` is not asked again for the same call. Library exceptions end
here: their text goes to the log, never to the client. Cancellation propagates untouched.
This module knows nothing of parking, sub-agents or MCP; it must never build a toolset.

Given a tracer provider, pydantic-ai traces each run, model call and tool call (spans
without prompts, outputs or tool arguments: those may hold secrets the event log masks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import structlog
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, Instrumentation, ProcessHistory
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, UserContent, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.run import AgentRun, AgentRunResult
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import UsageLimits

from blitz.agent.deps import ToolDeps
from blitz.agent.events import EventMapper
from blitz.agent.ledger import usage_entry
from blitz.agent.models import is_free
from blitz.agent.retrying import (
    RetryPolicy,
    classify,
    misbehaviour_error,
    model_error,
    retry_notice,
    status_of,
)
from blitz.agent.window import window_processor
from blitz.ports.agent import TurnIO
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["ModelCalls", "ModelLoop", "RunOutput", "RunStart", "add_user_text"]

log = structlog.get_logger(__name__)

# What a run ends with: the answer, or the calls that need a person.
RunOutput = str | DeferredToolRequests

# The core counts model calls (max_turns) through before_model_call; pydantic-ai's own
# default cap of 50 requests would end long turns behind its back.
_NO_LIMITS = UsageLimits(request_limit=None)

_T = TypeVar("_T")


@dataclass(frozen=True)
class RunStart:
    """Where a run begins: a prompt after a history, or a parked history and its results."""

    messages: list[ModelMessage] | None = None
    prompt: str | Sequence[UserContent] | None = None
    deferred: DeferredToolResults | None = None


class ModelCalls:
    """Retries the failed model calls of one run, or of one direct call (see module doc)."""

    def __init__(self, policy: RetryPolicy, *, io: TurnIO, model: str) -> None:
        self._policy = policy
        self._io = io
        self._model = model
        # Failed tries of the current model call.
        self._failures = 0

    def answered(self) -> None:
        """A model call came back whole: the next one starts with a clean slate."""
        self._failures = 0

    async def retried(
        self,
        attempt: Callable[[], Awaitable[_T]],
        *,
        before_retry: Callable[[], None] | None = None,
    ) -> _T:
        """`attempt()`'s result, trying it again while its model calls fail retryably.

        `before_retry` prepares the next try (after the notice, before the backoff).
        """
        while True:
            try:
                return await attempt()
            except ModelAPIError as exc:
                delay = self._delay(exc)
                if before_retry is not None:
                    before_retry()
                await asyncio.sleep(delay)
            except UnexpectedModelBehavior as exc:
                log.warning("model_misbehaved", model=self._model, error=_details(exc))
                raise misbehaviour_error(exc, model=self._model) from exc

    def _delay(self, exc: ModelAPIError) -> float:
        """How long to wait before the next try, told to the client; or the turn's error."""
        self._failures += 1
        attempt, retries = self._failures, self._policy.retries
        if classify(exc) != "retry" or attempt > retries:
            log.warning(
                "model_call_failed",
                model=self._model,
                status=status_of(exc),
                attempts=attempt,
                error=_details(exc),
            )
            raise model_error(exc, model=self._model, attempts=attempt) from exc
        delay = self._policy.delay(attempt, exc.retry_after)
        log.info(
            "model_call_retrying",
            model=self._model,
            status=status_of(exc),
            error=type(exc).__name__,
            retry=attempt,
            delay=delay,
        )
        text = retry_notice(exc, delay=delay, attempt=attempt, retries=retries)
        self._io.emit(turn_pb2.TurnEvent(notice=turn_pb2.Notice(text=text, transient=True)))
        return delay


class ModelLoop:
    """The pydantic-ai agent every run of every turn goes through, and its retry policy.

    One instance serves any number of runs concurrently: it keeps nothing of a run.
    """

    def __init__(
        self,
        *,
        instructions: str,
        tool_retries: int,
        retry: RetryPolicy,
        window_of: Callable[[RunContext[ToolDeps]], int | None],
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        """
        Args:
            instructions: The system instructions of every run (a run may add its own).
            tool_retries: How often a model may retry a tool call with invalid arguments.
            retry: Retries of failed model calls and their backoff.
            window_of: The context window of a run's model (None: unknown, never trimmed).
            tracer_provider: Where runs, model calls and tool calls are traced; None: not.
        """
        self._retry = retry
        capabilities: list[AbstractCapability[ToolDeps]] = [
            ProcessHistory(window_processor(window_of))
        ]
        if tracer_provider is not None:
            settings = InstrumentationSettings(
                tracer_provider=tracer_provider, include_content=False
            )
            capabilities.append(Instrumentation(settings=settings))
        self._agent = PydanticAgent[ToolDeps, RunOutput](
            output_type=[str, DeferredToolRequests],
            deps_type=ToolDeps,
            instructions=instructions,
            retries=tool_retries,
            capabilities=capabilities,
        )

    def model_calls(self, *, io: TurnIO, model: str) -> ModelCalls:
        """The retrying of one run's (or one direct call's) model calls."""
        return ModelCalls(self._retry, io=io, model=model)

    async def run_to_end(
        self,
        start: RunStart,
        *,
        model: str,
        llm: Model,
        deps: ToolDeps,
        mapper: EventMapper,
        toolsets: Sequence[AbstractToolset[ToolDeps]],
        instructions: str | None = None,
    ) -> AgentRunResult[RunOutput]:
        """One pydantic-ai run to its end, model calls through `deps.io`, retried as needed.

        `model` is the session's name for `llm` (the ledger's), `instructions` are added to
        the loop's own.
        """
        calls = self.model_calls(io=deps.io, model=model)
        attempts = _Attempts(start)

        async def attempt() -> AgentRunResult[RunOutput]:
            return await self._attempt(
                attempts,
                calls,
                model=model,
                llm=llm,
                deps=deps,
                mapper=mapper,
                toolsets=toolsets,
                instructions=instructions,
            )

        def before_retry() -> None:
            attempts.restart()
            mapper.restart()

        return await calls.retried(attempt, before_retry=before_retry)

    async def _attempt(
        self,
        attempts: _Attempts,
        calls: ModelCalls,
        *,
        model: str,
        llm: Model,
        deps: ToolDeps,
        mapper: EventMapper,
        toolsets: Sequence[AbstractToolset[ToolDeps]],
        instructions: str | None,
    ) -> AgentRunResult[RunOutput]:
        """One try of the run, from where the last try left it."""
        agent, io, start = self._agent, deps.io, attempts.start
        free = is_free(llm)
        async with agent.iter(
            start.prompt,
            message_history=start.messages,
            deferred_tool_results=start.deferred,
            model=llm,
            deps=deps,
            usage_limits=_NO_LIMITS,
            toolsets=toolsets,
            instructions=instructions,
        ) as run:
            attempts.current = run
            async for node in run:
                if agent.is_model_request_node(node):
                    if attempts.retrying:
                        # before_model_call was already called for this very request.
                        attempts.retrying = False
                    elif steer := await io.before_model_call():
                        add_user_text(node.request, steer)
                    async with node.stream(run.ctx) as stream:
                        async for event in stream:
                            mapper.model_event(event)
                            await io.pace()
                    mapper.response_done()
                    calls.answered()
                    await io.record_model_call(usage_entry(model, stream.response, free=free))
                elif agent.is_call_tools_node(node):
                    async with node.stream(run.ctx) as tool_stream:
                        async for tool_event in tool_stream:
                            mapper.tool_event(tool_event)
            result = run.result
        if result is None:  # pragma: no cover - iter() always ends with a result
            raise RuntimeError("agent run ended without a result")
        return result


class _Attempts:
    """Where the next try of a run starts, and whether it retries a failed model call."""

    def __init__(self, start: RunStart) -> None:
        self.start = start
        # The run of the try under way, once pydantic-ai has begun it.
        self.current: AgentRun[ToolDeps, RunOutput] | None = None
        self.retrying = False

    def restart(self) -> None:
        """The try failed in a model call: the next starts from the messages sent so far."""
        if self.current is not None:
            sent = list(self.current.ctx.state.message_history)
            if sent and isinstance(sent[-1], ModelRequest):
                # Everything up to the failed request, tool results included.
                self.start = RunStart(messages=sent)
        self.current = None
        self.retrying = True


def _details(exc: Exception) -> str:
    """What the log keeps of a failed call: the provider's status, body and message.

    A field, not a traceback: the trace runs through pydantic-ai's graph and says nothing
    the operator needs, and rendering its frames costs more than the call did.
    """
    text = f"{type(exc).__name__}: {exc}"
    if exc.__cause__ is not None:
        text += f" (from {type(exc.__cause__).__name__}: {exc.__cause__})"
    return text


def add_user_text(request: ModelRequest, texts: list[str]) -> None:
    """Append steer texts to the request a node is about to send (and history will keep)."""
    extra = [UserPromptPart(text) for text in texts]
    if isinstance(request.parts, list):
        # pydantic-ai keeps the very list it was given; extend it where it lives.
        request.parts.extend(extra)
    else:
        request.parts = [*request.parts, *extra]
