"""What the demo model answers: one reply, decided from the history alone.

`reply_to` reads the latest user prompt (its directives, see directives.py), how many tool
results came back since (each tool directive is one response with one tool call; a denied
or failed call counts as done), and any steer text added to the request (acknowledged with
"Noted: ..."). When the tool directives are used up, the final reply echoes the plain text
("You said: ..."), any `stream: N` chunks, and a line on each tool outcome.

Plan mode (the model was offered no `run_command`) runs only the directives that look
around (read, ls, ask), turns the ones that would act (`$`, write, delete) and any `todo:`
items into one proposed task list (a `todo` call), and ends with "Proposed plan:" and the
numbered steps. A later prompt that carries a "Proposed plan:" (the user accepted it)
carries out the directives of the prompt that plan was proposed for, this time for real.
Images attached to the prompt are acknowledged ("I see 1 image (image/png, 68 bytes)."), a
compaction request gets a deterministic summary, and `doing: N` reads the current task list
from the history (the last todo result) when its turn comes.

A `Reply` is planned up front and expanded into text chunks lazily (model.py streams it).
Everything here is a pure function of the messages: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from blitz.agent.compaction import COMPACT_INSTRUCTION, prompt_text
from blitz.agent.demo.directives import Directive, Progress, Say, Stream, Think, ToolStep, parse
from blitz.agent.policy import PLAN_TOOLS
from blitz.agent.tasks import TaskList

__all__ = ["WORD", "Reply", "reply_to"]

# How text is cut into streamed chunks: a word with the spaces after it.
WORD = re.compile(r"\S+\s*|\s+")
# How much of a tool's output the final answer quotes.
_QUOTE = 2000
# How a proposed plan opens, in the demo's answer and in the prompt that accepts it.
_PROPOSAL = "Proposed plan:"


@dataclass
class Reply:
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
                yield from WORD.findall(block)

    def output_tokens(self) -> int:
        words = sum(len(t.split()) for t in self.thoughts)
        for block in self.blocks:
            words += 2 * block.count if isinstance(block, Stream) else len(block.split())
        if self.call is not None:
            words += 1 + len(json.dumps(self.call.args).split())
        return words


def reply_to(messages: Sequence[ModelMessage], *, plan_mode: bool = False) -> Reply:
    """What to answer to `messages` (in plan mode: propose, do not act)."""
    reply = Reply(input_tokens=sum(_words(m) for m in messages))
    found = _turn_prompt(messages)
    if found is None:
        reply.blocks.append("Hello from the demo model. Nothing to do.")
        return reply
    index, prompt = found
    if prompt.startswith(COMPACT_INSTRUCTION):
        reply.blocks.append(_compaction_summary(prompt))
        return reply
    directives: list[Directive] = parse(prompt)
    proposed: list[str] = []
    if plan_mode:
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
    reply.blocks.extend(_outcome_line(part) for part in returns)
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
            steps.append(_plan_step(directive))
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


def _plan_step(step: ToolStep) -> str:
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


def _compaction_summary(prompt: str) -> str:
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


def _outcome_line(part: ToolReturnPart) -> str:
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
        return _answer_line(content)
    if tool == "todo":
        return f"task list set ({len(content.get('tasks') or [])} items)"
    if tool == "delegate":
        return f"{content.get('agent')}: {content.get('output')}"
    return f"{tool}: {json.dumps(content, default=str)}"


def _answer_line(content: dict[str, Any]) -> str:
    """What the user answered: the options or text, a form's values, or that none came."""
    if content.get("declined"):
        return "answer: declined the form"
    values = content.get("values")
    if isinstance(values, dict):
        # By name: a Struct keeps no order of its keys, and the demo must be deterministic.
        filled = ", ".join(f"{name}={_value(values[name])}" for name in sorted(values))
        return f"answer: {filled or '(an empty form)'}"
    answers = content.get("answers") or []
    return f"answer: {', '.join(answers)}" if answers else "answer: (none came)"


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a Struct's numbers are doubles: a whole number reads whole
    return value if isinstance(value, str) else json.dumps(value)


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
