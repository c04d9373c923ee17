"""The model loop: one run to its end, and the retry of failed model calls.

`ModelLoop.run_to_end` drives one run — the main agent's or a sub-agent's: a model call,
then the tool step of its response (tool_step.py), and again, until the model answers with
text or a tool defers its call. Before every model request it calls
`TurnIO.before_model_call` (which may stop the turn, and hands over steer text that is added
to the request) and fits the history into the model's window (window.py); it streams the
response into the `EventMapper` and records the call with `TurnIO.record_model_call`. A run
ends with a `RunResult`: the answer or the open calls, and the history.

This is pydantic-ai's agent loop for what Blitz uses of it — function tools, text output,
deferred calls — on pydantic-ai's models, toolsets and messages. The library's own graph
(`Agent.iter`) built a run's machinery afresh for every start and resume, and cost a
turn several times the CPU of everything else it does (docs/benchmarks.md); here a run
is a loop over plain data, and the tools of the toolsets that never change are listed
once per process.

`ModelCalls` is the one place a failed model call is retried, for runs and for the single
call of a compaction alike: retrying.py classifies the failure; a rate limit, a server
error or a broken stream is retried after a transient `notice` and a backoff, anything else
— or the last failed try — fails the turn with `BlitzError(MODEL_ERROR)` (a too-long prompt
`CONTEXT_OVERFLOW`). A retried call sends the same request again: no tool runs twice, and
`before_model_call` is not asked again for it. Library exceptions end here: their text goes
to the log, never to the client. Cancellation propagates untouched. This module knows
nothing of parking, sub-agents or MCP; it must never build a toolset.

Given a tracer provider, model calls and tool calls are traced (pydantic-ai's model
instrumentation; spans without prompts, outputs or tool arguments: those may hold secrets
the event log masks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import structlog
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.instrumented import InstrumentationSettings, InstrumentedModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage

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
from blitz.agent.tool_step import Listings, Resolved, ToolBelt, list_tools
from blitz.agent.window import window_processor
from blitz.ports.agent import TurnIO
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = ["ModelCalls", "ModelLoop", "RunOutput", "RunResult", "RunStart", "add_user_text"]

log = structlog.get_logger(__name__)

# What a run ends with: the answer, or the calls that need a person.
RunOutput = str | DeferredToolRequests

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


@dataclass
class RunResult:
    """How a run ended: its output (the answer, or the calls that need a person) and the
    whole history, the run's own messages included."""

    output: RunOutput
    messages: list[ModelMessage]

    def all_messages(self) -> list[ModelMessage]:
        return self.messages

    def all_messages_json(self) -> bytes:
        return ModelMessagesTypeAdapter.dump_json(self.messages)


class ModelLoop:
    """The loop every run of every turn goes through: model call, tool step, and again.

    One instance serves any number of runs concurrently: it keeps nothing of a run, only
    the listings of the toolsets that never change.
    """

    def __init__(
        self,
        *,
        instructions: str,
        tool_retries: int,
        retry: RetryPolicy,
        window_of: Callable[[RunContext[ToolDeps]], int | None],
        tracer_provider: TracerProvider | None = None,
        static_toolsets: Sequence[AbstractToolset[ToolDeps]] = (),
    ) -> None:
        """
        Args:
            instructions: The system instructions of every run (a run may add its own).
            static_toolsets: Toolsets whose tools never change: listed once, not per run.
            tool_retries: How often a model may retry a tool call with invalid arguments,
                and a response with no answer and no tool call.
            retry: Retries of failed model calls and their backoff.
            window_of: The context window of a run's model (None: unknown, never trimmed).
            tracer_provider: Where model calls and tool calls are traced; None: not.
        """
        self._instructions = instructions
        self._tool_retries = tool_retries
        self._retry = retry
        self._fit = window_processor(window_of)
        self._tracing: InstrumentationSettings | None = None
        self._tracer: Tracer | None = None
        if tracer_provider is not None:
            self._tracing = InstrumentationSettings(
                tracer_provider=tracer_provider, include_content=False
            )
            self._tracer = tracer_provider.get_tracer("blitz.agent")
        self._listed: Listings = {id(t): (t, None) for t in static_toolsets}
        # Each model wrapped for tracing, by id (the model kept beside it).
        self._traced: dict[int, tuple[Model, Model]] = {}

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
    ) -> RunResult:
        """One run to its end, model calls through `deps.io`, retried as needed.

        `model` is the session's name for `llm` (the ledger's), `instructions` are added to
        the loop's own.
        """
        try:
            return await self._run(
                start,
                model=model,
                llm=llm,
                deps=deps,
                mapper=mapper,
                toolsets=toolsets,
                instructions=instructions,
            )
        except UnexpectedModelBehavior as exc:  # a tool called wrongly too often
            log.warning("model_misbehaved", model=model, error=_details(exc))
            raise misbehaviour_error(exc, model=model) from exc

    async def _run(
        self,
        start: RunStart,
        *,
        model: str,
        llm: Model,
        deps: ToolDeps,
        mapper: EventMapper,
        toolsets: Sequence[AbstractToolset[ToolDeps]],
        instructions: str | None,
    ) -> RunResult:
        io = deps.io
        # Provider-valid whatever stored it (pydantic-ai's graph kept a parked run's answers
        # and its resumed ones as two requests in a row): the repair every request had there.
        messages = repair_messages(
            start.messages or [], repair_last_response=start.deferred is None
        )
        ctx = RunContext[ToolDeps](
            deps=deps,
            model=llm,
            usage=RunUsage(),
            prompt=start.prompt,
            messages=messages,
            max_retries=self._tool_retries,
        )
        belt = ToolBelt(
            tools=await list_tools(toolsets, ctx, self._listed),
            deps=deps,
            ctx=ctx,
            mapper=mapper,
            default_retries=self._tool_retries,
            tracer=self._tracer,
        )
        texts = [self._instructions, *([instructions] if instructions else [])]
        params = ModelRequestParameters(
            function_tools=belt.definitions,
            instruction_parts=[InstructionPart(text) for text in texts],
        )
        joined = InstructionPart.join(params.instruction_parts or [])
        calls = self.model_calls(io=io, model=model)
        sender = self._sender(llm)
        free = is_free(llm)

        if start.deferred is not None:
            resumed = await _resume(messages, start.deferred, belt)
            if isinstance(resumed, RunResult):
                return resumed
            request = resumed
        else:
            request = ModelRequest(parts=[UserPromptPart(start.prompt or "")])
        output_retries = 0
        while True:
            request.instructions = joined
            messages.append(request)
            if steer := await io.before_model_call():
                add_user_text(request, steer)
            kept = await self._fit(ctx, messages)
            if kept is not messages:
                messages[:] = kept

            async def attempt() -> ModelResponse:
                return await _streamed(sender, messages, params, ctx, mapper, io)

            response = await calls.retried(attempt, before_retry=mapper.restart)
            mapper.response_done()
            calls.answered()
            messages.append(response)
            await io.record_model_call(usage_entry(model, response, free=free))

            tool_calls = response.tool_calls
            if not tool_calls:
                text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
                if text:
                    return RunResult(output=text, messages=messages)
                output_retries += 1
                if output_retries > self._tool_retries:
                    raise UnexpectedModelBehavior(
                        f"Exceeded maximum retries ({self._tool_retries}) for output validation"
                    )
                request = ModelRequest(
                    parts=[
                        RetryFeedbackPart(content=_NO_OUTPUT, retry=RetryInfo(cause="no_output"))
                    ]
                )
                continue
            step = await belt.run_calls(tool_calls)
            if step.deferred is not None:
                if step.parts:
                    messages.append(ModelRequest(parts=step.parts))
                return RunResult(output=step.deferred, messages=messages)
            request = ModelRequest(parts=step.parts)

    def _sender(self, llm: Model) -> Model:
        """The model the requests go to: `llm`, wrapped for tracing when tracing is on."""
        if self._tracing is None:
            return llm
        traced = self._traced.get(id(llm))
        if traced is None or traced[0] is not llm:
            traced = self._traced[id(llm)] = (llm, InstrumentedModel(llm, self._tracing))
        return traced[1]


_NO_OUTPUT = "Please answer with text, or call one of the tools."


async def _streamed(
    llm: Model,
    messages: list[ModelMessage],
    params: ModelRequestParameters,
    ctx: RunContext[ToolDeps],
    mapper: EventMapper,
    io: TurnIO,
) -> ModelResponse:
    """One model call, its stream mapped to events as it comes."""
    async with llm.request_stream(messages, None, params, ctx) as stream:
        async for event in stream:
            mapper.model_event(event)
            await io.pace()
    return stream.get()


async def _resume(
    messages: list[ModelMessage], deferred: DeferredToolResults, belt: ToolBelt
) -> ModelRequest | RunResult:
    """The parked run's open calls, run with their results: the request that carries the
    answers on, or the run parked again."""
    answered: list[ModelRequestPart] = []
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        # The answers of the calls that ran before the run parked.
        answered = list(last.parts)
        messages.pop()
    response = messages[-1] if messages else None
    if not isinstance(response, ModelResponse) or not response.tool_calls:
        raise UnexpectedModelBehavior("a parked history ends without the calls it parked on")
    results: dict[str, Resolved] = dict(deferred.to_tool_call_results())
    for part in answered:
        if isinstance(part, ToolReturnPart):
            results[part.tool_call_id] = "skip"
    step = await belt.run_calls(response.tool_calls, results=results, metadata=deferred.metadata)
    parts = [*answered, *step.parts]
    if step.deferred is not None:
        if parts:
            messages.append(ModelRequest(parts=parts))
        return RunResult(output=step.deferred, messages=messages)
    return ModelRequest(parts=parts)


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
