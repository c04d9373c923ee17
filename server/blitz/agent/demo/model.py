"""`demo`: a deterministic, offline pydantic-ai model driven by directives in the prompt.

It lets every event kind be seen with no key and no network. What it answers is decided by
replies.py from the history alone (the prompt's directives, see directives.py); this module
is the pydantic-ai `Model` around it: a whole `ModelResponse` for `request`, and for
`request_stream` the reply's thinking word by word, its text chunk by chunk and its tool
call in two pieces, as a real provider streams them. Plan mode shows in the tools it is
offered (no `run_command`). A `delegate` directive is one tool call; the sub-agent is the
demo model again, playing the directives of its task.

It must stay cheap per chunk (it drives the streaming benchmarks: chunks are generated
lazily, nothing sleeps) and must never do I/O.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from blitz.agent.demo.replies import WORD, Reply, reply_to

__all__ = ["DEMO_MODEL_NAME", "DemoModel"]

DEMO_MODEL_NAME = "demo"

# Part ids for the parts manager: one text part per response, thinking parts numbered.
_TEXT_PART = "text"
_CALL_PART = "call"


@dataclass(init=False)
class DemoModel(Model):
    """The built-in `demo` model. Free: its calls are priced at zero."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def model_name(self) -> str:
        return DEMO_MODEL_NAME

    @property
    def system(self) -> str:
        return DEMO_MODEL_NAME

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.prepare_request(model_settings, model_request_parameters)
        reply = reply_to(messages, plan_mode=_plan_mode(model_request_parameters))
        parts: list[ModelResponsePart] = [ThinkingPart(t) for t in reply.thoughts]
        if reply.blocks:
            parts.append(TextPart("".join(reply.text_chunks())))
        if reply.call is not None:
            parts.append(
                ToolCallPart(reply.call.tool, dict(reply.call.args), tool_call_id=_call_id())
            )
        return ModelResponse(
            parts=parts,
            model_name=DEMO_MODEL_NAME,
            usage=RequestUsage(
                input_tokens=reply.input_tokens, output_tokens=reply.output_tokens()
            ),
        )

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        _, params = self.prepare_request(model_settings, model_request_parameters)
        reply = reply_to(messages, plan_mode=_plan_mode(model_request_parameters))
        yield _DemoStream(model_request_parameters=params, reply=reply)


@dataclass
class _DemoStream(StreamedResponse):
    reply: Reply = field(default_factory=Reply)
    _timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        reply = self.reply
        manager = self._parts_manager
        self._usage = RequestUsage(input_tokens=reply.input_tokens)
        for n, thought in enumerate(reply.thoughts):
            for word in WORD.findall(thought):
                for event in manager.handle_thinking_delta(vendor_part_id=n, content=word):
                    yield event
        handle_text = manager.handle_text_delta
        for chunk in reply.text_chunks():
            for event in handle_text(vendor_part_id=_TEXT_PART, content=chunk):
                yield event
        if reply.call is not None:
            # Arguments arrive in two pieces, as a real provider streams them, so clients see
            # a partial tool call before the whole one.
            args = json.dumps(reply.call.args)
            half = len(args) // 2
            for event in manager.handle_tool_call_delta_events(
                vendor_part_id=_CALL_PART,
                tool_name=reply.call.tool,
                args=args[:half],
                tool_call_id=_call_id(),
            ):
                yield event
            for event in manager.handle_tool_call_delta_events(
                vendor_part_id=_CALL_PART, args=args[half:]
            ):
                yield event
        self._usage = RequestUsage(
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens()
        )

    async def close_stream(self) -> None:
        # Nothing to close: there is no connection.
        return None

    @property
    def model_name(self) -> str:
        return DEMO_MODEL_NAME

    @property
    def provider_name(self) -> None:
        return None

    @property
    def provider_url(self) -> None:
        return None

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


def _call_id() -> str:
    # Unique across sessions: the core keys pending requests by it.
    return f"demo_{uuid.uuid4().hex}"


def _plan_mode(params: ModelRequestParameters) -> bool:
    """Plan mode offers tools, but none that acts."""
    names = {tool.name for tool in params.function_tools}
    return bool(names) and "run_command" not in names
