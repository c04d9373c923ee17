"""Fitting the history into the model's context window, by dropping older whole turns.

Runs before every model request (a pydantic-ai history processor). When the estimated
prompt would not fit the window (less room for the answer), the oldest whole turns go first
— a turn starts at a user prompt — so a tool call is never separated from its result. Every
drop is announced with a `history_trimmed` event saying how many messages went and how
many turns are kept; it is never silent. When
even the current turn alone does not fit, the turn fails with CONTEXT_OVERFLOW. The dropped
messages are gone from the session's history too: later turns start from what was sent.

Token counts are estimates (about four characters a token, a flat amount per image),
corrected by the provider's own count of the last response where there is one. A model
with no known window is never trimmed here; its provider's context-length error still
becomes CONTEXT_OVERFLOW (retrying.py). This module only drops messages; it never edits one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic_ai import RunContext
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from blitz.agent.deps import ToolDeps
from blitz.errors import BlitzError, Reason
from blitz.v1 import turn_pb2

__all__ = [
    "CONTEXT_WINDOW",
    "HISTORY_TURNS",
    "bounded_history",
    "estimate_tokens",
    "fit_messages",
    "turn_starts",
    "window_processor",
]

# HistoryTrimmed.reason: one request did not fit the model's window, or the session keeps
# at most `history_turns` turns.
CONTEXT_WINDOW = "context_window"
HISTORY_TURNS = "history_turns"

_CHARS_PER_TOKEN = 4
_IMAGE_TOKENS = 1500
_PART_OVERHEAD = 4


def estimate_tokens(message: ModelMessage) -> int:
    """A rough token count of one message."""
    chars = 0
    tokens = 0
    for part in message.parts:
        tokens += _PART_OVERHEAD
        if isinstance(part, UserPromptPart):
            content = part.content
            if isinstance(content, str):
                chars += len(content)
            else:
                for item in content:
                    if isinstance(item, str):
                        chars += len(item)
                    elif isinstance(item, BinaryContent):
                        tokens += _IMAGE_TOKENS
        elif isinstance(part, ToolReturnPart):
            chars += len(part.model_response_str())
        elif isinstance(part, RetryPromptPart):
            chars += len(part.model_response())
        elif isinstance(part, TextPart | ThinkingPart):
            chars += len(part.content)
        elif isinstance(part, ToolCallPart):
            chars += len(part.tool_name) + len(part.args_as_json_str())
        else:
            chars += len(str(getattr(part, "content", "")))
    return tokens + chars // _CHARS_PER_TOKEN


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    """Indexes of the requests that open a turn: a user prompt, no tool results."""
    starts = []
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        parts = message.parts
        if any(isinstance(p, UserPromptPart) for p in parts) and not any(
            isinstance(p, ToolReturnPart | RetryPromptPart) for p in parts
        ):
            starts.append(index)
    return starts


def fit_messages(messages: list[ModelMessage], *, budget: int) -> tuple[list[ModelMessage], int]:
    """The messages with the oldest whole turns dropped until they fit `budget` tokens.

    Returns the kept messages and how many were dropped. Raises CONTEXT_OVERFLOW when the
    last turn alone does not fit.
    """
    sizes = [estimate_tokens(m) for m in messages]
    _calibrate(messages, sizes)
    # Tokens of the messages from `kept` on.
    remaining, kept = sum(sizes), 0
    if remaining <= budget:
        return messages, 0
    for start in turn_starts(messages):
        if start == 0:
            continue
        remaining -= sum(sizes[kept:start])
        kept = start
        if remaining <= budget:
            return messages[start:], start
    raise BlitzError(
        Reason.CONTEXT_OVERFLOW,
        f"the prompt (about {remaining} tokens) does not fit the model's context "
        f"window even without older turns (room for about {budget} tokens)",
        {"budget_tokens": str(budget), "prompt_tokens": str(remaining)},
    )


def _calibrate(messages: Sequence[ModelMessage], sizes: list[int]) -> None:
    """Replace estimates up to the last response by the provider's count, where it gave one.

    The provider counted the prompt of its last response exactly (input tokens) and the
    response itself (output tokens); the estimates of those messages are scaled to match,
    so the drop decision rests on real counts as far as they go.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse):
            measured = message.usage.input_tokens + message.usage.output_tokens
            estimated = sum(sizes[: index + 1])
            if measured > 0 and estimated > 0:
                ratio = measured / estimated
                for i in range(index + 1):
                    sizes[i] = round(sizes[i] * ratio)
            return


def window_processor(
    window_of: Callable[[RunContext[ToolDeps]], int | None],
) -> Callable[[RunContext[ToolDeps], list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """A history processor that fits each request into the window `window_of` gives."""

    # Async on purpose: pydantic-ai runs plain functions in a thread, and TurnIO is not
    # thread-safe.
    async def fit(ctx: RunContext[ToolDeps], messages: list[ModelMessage]) -> list[ModelMessage]:
        window = window_of(ctx)
        if not window:
            return messages
        # Room for the answer: a quarter of the window, at most 16k tokens.
        budget = window - min(window // 4, 16384)
        kept, dropped = fit_messages(messages, budget=budget)
        if dropped:
            ctx.deps.io.emit(
                turn_pb2.TurnEvent(
                    history_trimmed=turn_pb2.HistoryTrimmed(
                        dropped_messages=dropped,
                        kept_turns=len(turn_starts(kept)),
                        reason=CONTEXT_WINDOW,
                    )
                )
            )
        return kept

    return fit


def bounded_history(
    messages: list[ModelMessage], *, max_turns: int
) -> tuple[list[ModelMessage], int]:
    """The history a session keeps: past `max_turns` whole turns, the oldest go until a
    quarter of the room is free again (so that trimming is rare, and a turn's cost stays
    flat however long the session). Returns the kept messages and how many turns went."""
    starts = turn_starts(messages)
    if max_turns <= 0 or len(starts) <= max_turns:
        return messages, 0
    keep = max(1, max_turns * 3 // 4)
    dropped = len(starts) - keep
    return messages[starts[dropped] :], dropped
