"""What the model is sent for a turn: the prompt, with attached context as plain text."""

from __future__ import annotations

from html.parser import HTMLParser

from blitz.v1.turn_pb2 import Turn

__all__ = ["html_to_text", "model_prompt"]

_SKIPPED = {"script", "style", "head", "noscript", "template"}
_BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section"}


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skip += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED and self._skip:
            self._skip -= 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML fragment: no tags, scripts or styles; blank runs squeezed."""
    parser = _TextOnly()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def model_prompt(turn: Turn) -> str:
    """`prompt` if set, else `text`, followed by each context block reduced to text."""
    parts = [turn.prompt or turn.text]
    for block in turn.context:
        body = block.text or html_to_text(block.html)
        head = " ".join(x for x in (block.kind or "context", block.title, block.url) if x)
        parts.append(f"[{head}]\n{body}")
    return "\n\n".join(parts)
