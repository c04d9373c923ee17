"""The tool step of a run: a model response's tool calls, each answered or deferred.

`ToolBelt` is the tools of one run, listed once when the run starts: their definitions go
to the model, and `run_calls` runs the calls of one response — several at once, in a task
group — and answers each with a `ToolReturnPart`, in call order. A call is answered:

- with what its tool returned (`outcome` success); the tool's own errors are part of that;
- as `retried` when the model got it wrong — an unknown tool, arguments that do not
  validate, or the tool raising `ModelRetry` — so the model tries again; a tool that keeps
  failing past its `max_retries` (consecutive steps) fails the run (`UnexpectedModelBehavior`);
- as `denied` when a person denied it.

A tool that raises `ApprovalRequired` or `CallDeferred` defers its call: the step ends with
the answers so far and a `DeferredToolRequests` naming the open calls and their metadata,
and the run parks. A resumed step gets a result per deferred call (`DeferredToolResults`):
an approved call runs again, approved (with the arguments a person edited); a denied one is
answered as such; a question's answer is the call's return.

This is pydantic-ai's tool-calling contract, for the tools Blitz has (function tools,
text output): the library's own graph does the same at several times the CPU per turn (see
docs/benchmarks.md). The messages are pydantic-ai's, so histories stay readable by it and by
every provider. Tool calls are traced (`execute_tool <name>`) when a tracer is given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError
from pydantic_ai import RunContext
from pydantic_ai.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelRequestPart,
    RetryInfo,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResult,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from blitz import metrics
from blitz.agent.deps import ToolDeps
from blitz.agent.events import EventMapper

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["Listings", "Resolved", "StepOutcome", "ToolBelt", "list_tools"]

# What a resumed step is given for a call: its deferred result, or "skip" when the call
# was answered before the run parked.
Resolved = DeferredToolResult | Literal["skip"]

# The toolsets whose tools never change, by id: the toolset, and its tools once listed.
Listings = dict[int, tuple[AbstractToolset[ToolDeps], dict[str, ToolsetTool[ToolDeps]] | None]]


@dataclass
class StepOutcome:
    """The answers of one step, in call order, and the calls it left open (if any)."""

    parts: list[ModelRequestPart]
    deferred: DeferredToolRequests | None = None


async def list_tools(
    toolsets: Sequence[AbstractToolset[ToolDeps]],
    ctx: RunContext[ToolDeps],
    listed: Listings,
) -> dict[str, tuple[AbstractToolset[ToolDeps], ToolsetTool[ToolDeps]]]:
    """Every tool of `toolsets` by name, with the toolset that calls it.

    `listed` holds the toolsets that never change (by id, the toolset kept alive beside
    its listing, None until first listed): each is listed once; others every time.
    """
    tools: dict[str, tuple[AbstractToolset[ToolDeps], ToolsetTool[ToolDeps]]] = {}
    for toolset in toolsets:
        cached = listed.get(id(toolset))
        if cached is not None and cached[0] is toolset:
            found = cached[1]
            if found is None:
                found = _as_sent(await toolset.get_tools(ctx))
                listed[id(toolset)] = (toolset, found)
        else:
            found = _as_sent(await toolset.get_tools(ctx))
        for name, tool in found.items():
            if name in tools:
                raise RuntimeError(f"two toolsets define the tool {name!r}")
            tools[name] = (toolset, tool)
    return tools


def _as_sent(
    tools: dict[str, ToolsetTool[ToolDeps]],
) -> dict[str, ToolsetTool[ToolDeps]]:
    """`tools` with each definition as pydantic-ai sends it (`prepare_return_schemas`): a
    return schema only where the tool asked for it. Once per listing, not per request."""
    sent = dict(tools)
    for name, tool in tools.items():
        definition = tool.tool_def
        if not definition.include_return_schema and definition.return_schema is not None:
            sent[name] = replace(tool, tool_def=replace(definition, return_schema=None))
    return sent


@dataclass
class ToolBelt:
    """The tools of one run, and the retry counts of the tools its model got wrong."""

    tools: Mapping[str, tuple[AbstractToolset[ToolDeps], ToolsetTool[ToolDeps]]]
    deps: ToolDeps
    ctx: RunContext[ToolDeps]
    mapper: EventMapper
    # Retries of a tool the model called wrongly, or that asked for a retry, when none is
    # given; unknown tools count against it too.
    default_retries: int
    tracer: Tracer | None = None
    # Consecutive failed steps of each tool, by name.
    retries: dict[str, int] = field(default_factory=dict)

    @property
    def definitions(self) -> list[ToolDefinition]:
        return [tool.tool_def for _, tool in self.tools.values()]

    async def run_calls(
        self,
        calls: Sequence[ToolCallPart],
        *,
        results: Mapping[str, Resolved] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> StepOutcome:
        """Run the calls of one response (with `results`, resume them); see module doc."""
        step = _Step(self, results or {}, metadata or {})
        todo = [
            (i, call)
            for i, call in enumerate(calls)
            if step.results.get(call.tool_call_id) != "skip"
        ]
        if len(todo) == 1:
            await step.one(*todo[0])
        elif todo:
            async with asyncio.TaskGroup() as group:
                for index, call in todo:
                    group.create_task(step.one(index, call))
        self.retries = {name: self.retries.get(name, 0) + 1 for name in step.failed}
        parts: list[ModelRequestPart] = [step.answers[i] for i in sorted(step.answers)]
        deferred = None
        if step.approvals or step.calls:
            order = {call.tool_call_id: i for i, call in enumerate(calls)}
            deferred = DeferredToolRequests(
                calls=sorted(step.calls, key=lambda c: order[c.tool_call_id]),
                approvals=sorted(step.approvals, key=lambda c: order[c.tool_call_id]),
                metadata=step.deferred_metadata,
            )
        return StepOutcome(parts=parts, deferred=deferred)


class _Step:
    """One step's calls: their answers by index, and those deferred."""

    def __init__(
        self, belt: ToolBelt, results: Mapping[str, Resolved], metadata: Mapping[str, Any]
    ) -> None:
        self.belt = belt
        self.results = results
        self.metadata = metadata
        self.answers: dict[int, ToolReturnPart] = {}
        self.approvals: list[ToolCallPart] = []
        self.calls: list[ToolCallPart] = []
        self.deferred_metadata: dict[str, dict[str, Any]] = {}
        self.failed: set[str] = set()

    async def one(self, index: int, call: ToolCallPart) -> None:
        belt = self.belt
        belt.mapper.tool_event(FunctionToolCallEvent(call))
        try:
            if belt.tracer is None:
                part = await self._answer(call)
            else:
                with belt.tracer.start_as_current_span(
                    f"execute_tool {call.tool_name}",
                    attributes={
                        "gen_ai.tool.name": call.tool_name,
                        "gen_ai.tool.call.id": call.tool_call_id,
                    },
                ):
                    part = await self._answer(call)
        except ApprovalRequired as exc:
            self.approvals.append(call)
            self.deferred_metadata[call.tool_call_id] = dict(exc.metadata or {})
            return
        except CallDeferred as exc:
            self.calls.append(call)
            self.deferred_metadata[call.tool_call_id] = dict(exc.metadata or {})
            return
        self.answers[index] = part
        belt.mapper.tool_event(FunctionToolResultEvent(part))

    async def _answer(self, call: ToolCallPart) -> ToolReturnPart:
        """The call's answer (raises to defer it)."""
        result = self.results.get(call.tool_call_id)
        approved = False
        args: str | dict[str, Any] | None = call.args
        if isinstance(result, ToolDenied):
            return _returned(call, result.message, outcome="denied")
        if isinstance(result, ToolApproved):
            approved = True
            if result.override_args is not None:
                args = result.override_args
        elif isinstance(result, ModelRetry):
            return self._retried(call, result, self.belt.default_retries)
        elif isinstance(result, ToolReturn):
            return _returned(call, result.return_value, metadata=result.metadata)
        elif result is not None:
            return _returned(call, result)  # a question's answer

        found = self.belt.tools.get(call.tool_name)
        if found is None:
            names = ", ".join(sorted(self.belt.tools)) or "none"
            error = ModelRetry(f"Unknown tool name: {call.tool_name!r}. Available tools: {names}")
            return self._retried(call, error, self.belt.default_retries, cause="unknown_tool")
        toolset, tool = found
        try:
            valid = _validated(tool, args)
        except ValidationError as exc:
            return self._retried(call, exc, tool.max_retries)
        ctx = RunContext(
            deps=self.belt.deps,
            model=self.belt.ctx.model,
            usage=self.belt.ctx.usage,
            prompt=self.belt.ctx.prompt,
            messages=self.belt.ctx.messages,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            retry=self.belt.retries.get(call.tool_name, 0),
            max_retries=tool.max_retries,
            tool_call_approved=approved,
            tool_call_metadata=self.metadata.get(call.tool_call_id) if approved else None,
        )
        started = time.perf_counter()
        try:
            value = await toolset.call_tool(call.tool_name, valid, ctx, tool)
        except ModelRetry as exc:
            metrics.tool_call(call.tool_name, "retried", time.perf_counter() - started)
            return self._retried(call, exc, tool.max_retries)
        except (ApprovalRequired, CallDeferred):
            raise  # not run yet: it runs, and is counted, once resumed
        except Exception:
            metrics.tool_call(call.tool_name, "error", time.perf_counter() - started)
            raise
        metrics.tool_call(call.tool_name, "ok", time.perf_counter() - started)
        if isinstance(value, ToolReturn):
            return _returned(call, value.return_value, metadata=value.metadata)
        return _returned(call, value)

    def _retried(
        self,
        call: ToolCallPart,
        error: ValidationError | ModelRetry,
        max_retries: int,
        *,
        cause: Literal["unknown_tool"] | None = None,
    ) -> ToolReturnPart:
        """The answer that asks the model to try the call again, within its retries."""
        name = call.tool_name
        attempt = self.belt.retries.get(name, 0)
        if attempt >= max_retries:
            raise UnexpectedModelBehavior(
                f"Tool {name!r} exceeded max retries count of {max_retries}"
            ) from error
        self.failed.add(name)
        content: Any
        if isinstance(error, ValidationError):
            content = error.errors(include_url=False, include_context=False)
        else:
            content = error.message
        return ToolReturnPart(
            tool_name=name,
            content=content,
            tool_call_id=call.tool_call_id,
            outcome="retried",
            retry=RetryInfo(
                cause=cause
                or ("validation_error" if isinstance(error, ValidationError) else "model_retry"),
                attempt=attempt + 1,
                max_retries=max_retries,
            ),
        )


def _validated(tool: ToolsetTool[ToolDeps], args: str | dict[str, Any] | None) -> dict[str, Any]:
    validator = tool.args_validator
    if isinstance(args, str):
        valid: dict[str, Any] = validator.validate_json(args or "{}")
    else:
        valid = validator.validate_python(args or {})
    return valid


def _returned(
    call: ToolCallPart,
    content: Any,
    *,
    outcome: Literal["success", "denied"] = "success",
    metadata: Any = None,
) -> ToolReturnPart:
    return ToolReturnPart(
        tool_name=call.tool_name,
        content=content,
        tool_call_id=call.tool_call_id,
        metadata=metadata,
        outcome=outcome,
    )
