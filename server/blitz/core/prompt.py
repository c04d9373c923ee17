"""What the model is sent for a turn: the prompt, with attached context as plain text."""

from __future__ import annotations

from blitz.html_text import html_to_text
from blitz.v1.turn_pb2 import Turn

__all__ = ["model_prompt"]


def model_prompt(turn: Turn) -> str:
    """`prompt` if set, else `text`, followed by each context block reduced to text."""
    parts = [turn.prompt or turn.text]
    for block in turn.context:
        body = block.text or html_to_text(block.html)
        head = " ".join(x for x in (block.kind or "context", block.title, block.url) if x)
        parts.append(f"[{head}]\n{body}")
    return "\n\n".join(p for p in parts if p)
