"""Compacting a session's history: one model call that summarises it, and the new history.

The history is rendered as a plain transcript (who said what, which tools ran and how they
ended) and sent as one user message asking for a summary, so any provider can answer it
without the tool definitions the original calls needed. The new history is that summary as
a single exchange the next turn builds on. The call goes through `TurnIO` like any other
(`before_model_call`, then `record_model_call`), so budgets and the ledger see it. Nothing
here touches the stored history: the caller decides whether to keep the result.
"""

from __future__ import annotations

from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model

__all__ = [
    "COMPACT_INSTRUCTION",
    "SUMMARY_PREFIX",
    "compacted_history",
    "prompt_text",
    "summarise",
    "summary_request",
    "transcript",
]

# The demo model recognises this opening and answers with a deterministic summary.
COMPACT_INSTRUCTION = (
    "Summarise the conversation below for yourself, so that you can continue the work from "
    "the summary alone: the user's goals, decisions made, files and commands involved, what "
    "is done and what is left. Be concise and factual."
)
SUMMARY_PREFIX = "Summary of the conversation so far (older messages were compacted):"
_QUOTE = 2000


def prompt_text(part: UserPromptPart) -> str:
    """The text of a user prompt; attachments (images) are left out."""
    if isinstance(part.content, str):
        return part.content
    return " ".join(c for c in part.content if isinstance(c, str))


def transcript(messages: list[ModelMessage]) -> str:
    """The conversation as plain text, tool outputs shortened."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                lines.append(f"User: {prompt_text(part)}")
            elif isinstance(part, TextPart):
                lines.append(f"Assistant: {part.content}")
            elif isinstance(part, ToolCallPart):
                lines.append(f"Assistant called {part.tool_name}({part.args_as_json_str()})")
            elif isinstance(part, ToolReturnPart):
                lines.append(f"{part.tool_name} returned: {part.model_response_str()[:_QUOTE]}")
            elif isinstance(part, RetryPromptPart):
                lines.append(f"(retry: {part.model_response()[:_QUOTE]})")
    return "\n".join(lines)


def summary_request(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The one-message conversation that asks the model for the summary."""
    prompt = f"{COMPACT_INSTRUCTION}\n\n<conversation>\n{transcript(messages)}\n</conversation>"
    return [ModelRequest(parts=[UserPromptPart(prompt)])]


def compacted_history(summary: str) -> bytes:
    """The history that replaces the compacted one: the summary, acknowledged."""
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(f"{SUMMARY_PREFIX}\n{summary}")]),
        ModelResponse(parts=[TextPart("Understood. I will continue from this summary.")]),
    ]
    return ModelMessagesTypeAdapter.dump_json(messages)


async def summarise(model: Model, messages: list[ModelMessage]) -> ModelResponse:
    """One streamed model call for the summary; the whole response."""
    async with model_request_stream(model, summary_request(messages)) as stream:
        async for _ in stream:
            pass
    return stream.get()
