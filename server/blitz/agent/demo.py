"""`demo`: a deterministic, offline pydantic-ai model driven by directives in the prompt.

It lets every event kind be seen with no key and no network. Each model request looks at the
history alone: the latest user prompt (its directives, see `directives.py`), how many tool
results came back since (each tool directive is one response with one tool call; a denied
or failed call counts as done), and any steer text added to the request (acknowledged with
"Noted: ..."). When the tool directives are used up, the final response streams the plain
text back ("You said: ..."), any `stream: N` chunks, and a summary of the tool outcomes.

Plan mode shows in the tools it is offered (no `run_command`): the demo then runs only the
directives that look around (read, ls, ask), turns the ones that would act (`$`, write,
delete) and any `todo:` items into one proposed task list (a `todo` call), and ends with
"Proposed plan:" and the numbered steps. A later prompt that carries a "Proposed plan:"
(the user accepted it) makes the demo carry out the directives of the prompt it proposed
that plan for, this time for real. Images attached to the prompt are acknowledged
("I see 1 image (image/png, 68 bytes)."). A compaction request gets a deterministic summary.
`doing: N` reads the current task list from the history (the last todo result) when its
turn comes. A `delegate` directive is one tool call; the sub-agent is the demo model again,
playing the directives of its task, and its report shows in the final summary.

It must stay cheap per chunk (it drives the streaming benchmarks: chunks are generated
lazily, nothing sleeps) and must never do I/O.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from blitz.agent.compaction import COMPACT_INSTRUCTION, prompt_text
from blitz.agent.directives import Directive, Progress, Say, Stream, Think, ToolStep, parse
from blitz.agent.policy import PLAN_TOOLS
from blitz.agent.tasks import TaskList

__all__ = ["DEMO_MODEL_NAME", "DemoModel"]

DEMO_MODEL_NAME = "demo"

_WORD = re.compile(r"\S+\s*|\s+")
# Part ids for the parts manager: one text part per response, thinking parts numbered.
_TEXT_PART = "text"
_CALL_PART = "call"
# How much of a tool's output the final summary quotes.
_QUOTE = 2000
# How a proposed plan opens, in the demo's answer and in the prompt that accepts it.
_PROPOSAL = "Proposed plan:"


@dataclass
class _Reply:
    """One demo response, planned up front and expanded into chunks lazily."""

    thoughts: list[str] = field(default_factory=list)
    # Text blocks, joined with newlines; a `Stream` block expands to numbered chunks.
    blocks: list[str | Stream] = field(default_factory=list)
    call: ToolStep | None = None
    input_tokens: int = 0

    def text_chunks(self) -> Iterator[str]:
        first = True
        for block in self.blocks:
            if not first:
                yield "\n"
            first = False
            if isinstance(block, Stream):
                # The load-test path: no per-chunk work beyond formatting the chunk.
                for i in range(block.count):
                    yield f"chunk {i} "
            else:
                yield from _WORD.findall(block)

    def output_tokens(self) -> int:
        words = sum(len(t.split()) for t in self.thoughts)
        for block in self.blocks:
            words += 2 * block.count if isinstance(block, Stream) else len(block.split())
        if self.call is not None:
            words += 1 + len(json.dumps(self.call.args).split())
        return words


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
        reply = _plan(messages, plan=_plan_mode(model_request_parameters))
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
        reply = _plan(messages, plan=_plan_mode(model_request_parameters))
        yield _DemoStream(model_request_parameters=params, reply=reply)


@dataclass
class _DemoStream(StreamedResponse):
    reply: _Reply = field(default_factory=_Reply)
    _timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        reply = self.reply
        manager = self._parts_manager
        self._usage = RequestUsage(input_tokens=reply.input_tokens)
        for n, thought in enumerate(reply.thoughts):
            for word in _WORD.findall(thought):
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


def _plan(messages: Sequence[ModelMessage], *, plan: bool = False) -> _Reply:
    """What to answer, from the history alone."""
    reply = _Reply(input_tokens=sum(_words(m) for m in messages))
    found = _turn_prompt(messages)
    if found is None:
        reply.blocks.append("Hello from the demo model. Nothing to do.")
        return reply
    index, prompt = found
    if prompt.startswith(COMPACT_INSTRUCTION):
        reply.blocks.append(_summary_of(prompt))
        return reply
    directives: list[Directive] = parse(prompt)
    proposed: list[str] = []
    if plan:
        directives, proposed = _proposed_plan(directives)
    elif _PROPOSAL in prompt and (planned := _planned_prompt(messages[:index])) is not None:
        directives = [Say("carrying out the accepted plan."), *parse(planned)]
    steps = [d for d in directives if isinstance(d, ToolStep | Progress)]
    returns = [
        part
        for message in messages[index + 1 :]
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    done = len(returns)

    steer = _steer(messages, index)
    segment = 0
    for directive in directives:
        if isinstance(directive, ToolStep | Progress):
            segment += 1
        elif isinstance(directive, Think) and segment == min(done, len(steps)):
            reply.thoughts.append(directive.text)
    reply.blocks.extend(f"Noted: {text}" for text in steer)

    if done < len(steps):
        step = steps[done]
        reply.call = _progress(messages, step) if isinstance(step, Progress) else step
        return reply

    images = _images(messages[index])
    if images:
        described = ", ".join(f"{media_type}, {size} bytes" for media_type, size in images)
        noun = "image" if len(images) == 1 else "images"
        reply.blocks.append(f"I see {len(images)} {noun} ({described}).")
    if proposed:
        numbered = "\n".join(f"{n}. {item}" for n, item in enumerate(proposed, start=1))
        reply.blocks.append(f"{_PROPOSAL}\n{numbered}")
    for directive in directives:
        if isinstance(directive, Say):
            # Consecutive plain lines read as one message.
            if reply.blocks and isinstance(reply.blocks[-1], str) and _is_echo(reply.blocks[-1]):
                reply.blocks[-1] += " " + directive.text
            else:
                reply.blocks.append("You said: " + directive.text)
        elif isinstance(directive, Stream):
            reply.blocks.append(directive)
    reply.blocks.extend(_summary(part) for part in returns)
    if not reply.blocks:
        reply.blocks.append("Done.")
    return reply


def _progress(messages: Sequence[ModelMessage], step: Progress) -> ToolStep:
    """The todo call that moves one item of the current list (unchanged when out of range)."""
    items = TaskList.from_history(messages).as_result()
    if 1 <= step.item <= len(items):
        if step.status == "in_progress":
            for item in items:
                if item["status"] == "in_progress":
                    item["status"] = "completed"
        items[step.item - 1]["status"] = step.status
    return ToolStep("todo", {"items": items})


def _proposed_plan(directives: list[Directive]) -> tuple[list[Directive], list[str]]:
    """Plan mode: the directives still run, and the steps of the proposed plan.

    Actions and todo items become plan steps; one `todo` call at the end proposes them.
    """
    kept: list[Directive] = []
    steps: list[str] = []
    for directive in directives:
        # Whatever plan mode does not offer would act: it becomes a step of the plan.
        if isinstance(directive, ToolStep) and directive.tool not in PLAN_TOOLS:
            steps.append(_describe(directive))
        elif isinstance(directive, ToolStep) and directive.tool == "todo":
            steps.extend(str(item["content"]) for item in directive.args["items"])
        else:
            kept.append(directive)
    if steps:
        items = [{"content": step, "status": "pending"} for step in steps]
        kept.append(ToolStep("todo", {"items": items}))
    return kept, steps


def _planned_prompt(messages: Sequence[ModelMessage]) -> str | None:
    """The prompt of the latest turn that ended with a proposed plan, if any."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse) and any(
            isinstance(p, TextPart) and _PROPOSAL in p.content for p in message.parts
        ):
            found = _turn_prompt(messages[:index])
            return found[1] if found else None
    return None


def _describe(step: ToolStep) -> str:
    if step.tool == "run_command":
        return f"run `{step.args['command']}`"
    if step.tool == "write_file":
        return f"write {step.args['path']}"
    if step.tool == "edit_file":
        return f"edit {step.args['path']}"
    if step.tool == "delete_file":
        return f"delete {step.args['path']}"
    if step.tool == "delegate":
        return f"have {step.args['agent']} do: {step.args['task']}"
    return f"call {step.tool}"


def _images(message: ModelMessage) -> list[tuple[str, int]]:
    """The images attached to a prompt: media type and size of each."""
    found: list[tuple[str, int]] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            for item in part.content:
                if isinstance(item, BinaryContent) and item.is_image:
                    found.append((item.media_type, len(item.data)))
    return found


def _summary_of(prompt: str) -> str:
    """A compaction summary: what the user asked and how many tools ran."""
    asked = [
        line.removeprefix("User: ") for line in prompt.splitlines() if line.startswith("User: ")
    ]
    calls = sum(1 for line in prompt.splitlines() if line.startswith("Assistant called "))
    said = "; ".join(a[:200] for a in asked[-10:]) or "nothing"
    return f"The user asked: {said}. Tool calls so far: {calls}."


def _is_echo(block: str) -> bool:
    return block.startswith("You said: ")


def _turn_prompt(messages: Sequence[ModelMessage]) -> tuple[int, str] | None:
    """The latest request that opened a turn (user text, no tool results), and its prompt."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, ModelRequest):
            continue
        if any(isinstance(p, ToolReturnPart) for p in message.parts):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                return index, prompt_text(part)
    return None


def _steer(messages: Sequence[ModelMessage], prompt_index: int) -> list[str]:
    """User text added to the request being answered, other than the turn's prompt."""
    last = messages[-1]
    if not isinstance(last, ModelRequest):
        return []
    texts = [prompt_text(p) for p in last.parts if isinstance(p, UserPromptPart)]
    if prompt_index == len(messages) - 1:
        texts = texts[1:]
    return texts


def _summary(part: ToolReturnPart) -> str:
    """One line (or a few) on how a tool call ended, for the final answer."""
    tool, content = part.tool_name, part.content
    if part.outcome == "denied":
        return f"{tool}: denied: {content}"
    if not isinstance(content, dict):
        return f"{tool}: {part.model_response_str()}"
    if "error" in content:
        return f"{tool}: error: {content['error']}"
    if tool == "run_command":
        status = "timed out" if content.get("timed_out") else f"exit {content.get('exit_code')}"
        output = str(content.get("output", ""))[:_QUOTE].rstrip("\n")
        more = " (output truncated)" if content.get("truncated") else ""
        return f"$ {content.get('command')} -> {status}{more}" + (f"\n{output}" if output else "")
    if tool == "write_file":
        return f"wrote {content.get('path')} ({content.get('bytes')} bytes)"
    if tool == "delete_file":
        return f"deleted {content.get('path')}"
    if tool == "edit_file":
        return f"edited {content.get('path')} ({content.get('bytes')} bytes)"
    if tool == "search":
        matches = content.get("matches") or []
        return f"search {content.get('pattern')}: {len(matches)} matches" + "".join(
            f"\n{m}" for m in matches[:20]
        )
    if tool == "fetch_url":
        text = str(content.get("content", ""))[:_QUOTE]
        return f"fetched {content.get('url')} ({content.get('status')}):\n{text}"
    if tool == "read_file":
        return f"read {content.get('path')}:\n{str(content.get('content', ''))[:_QUOTE]}"
    if tool == "list_files":
        return f"{content.get('path')}: {' '.join(content.get('entries', []))}"
    if tool == "ask_user":
        answers = content.get("answers") or []
        return f"answer: {', '.join(answers)}" if answers else "answer: (none came)"
    if tool == "todo":
        return f"task list set ({len(content.get('tasks') or [])} items)"
    if tool == "delegate":
        return f"{content.get('agent')}: {content.get('output')}"
    return f"{tool}: {json.dumps(content, default=str)}"


def _words(message: ModelMessage) -> int:
    """A deterministic stand-in for tokens: whitespace-separated words."""
    count = 0
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            count += len(prompt_text(part).split())
        elif isinstance(part, ToolReturnPart):
            count += len(part.model_response_str().split())
        elif isinstance(part, TextPart | ThinkingPart):
            count += len(part.content.split())
        elif isinstance(part, ToolCallPart):
            count += 1 + len(part.args_as_json_str().split())
    return count
