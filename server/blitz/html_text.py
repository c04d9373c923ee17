"""HTML reduced to readable text, for the model: what fetch_url returns and `context` holds.

Keeps the words and the shape a reader needs (paragraphs, headings, list items, table
rows on their own lines; links as `text (url)`), drops scripts, styles and markup. Pure
text in, text out, with the standard library's parser: it never fetches or runs anything
the page refers to.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "main", "nav", "aside",
        "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "table", "tr", "pre",
        "blockquote", "br", "hr", "dl", "dt", "dd", "figure", "figcaption", "form",
    }
)  # fmt: skip


class _Reducer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skipping = 0
        self._pre = 0
        self._href: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skipping += 1
            return
        if tag == "pre":
            self._pre += 1
        if tag in _BLOCK:
            self.out.append("\n")
        if tag == "li":
            self.out.append("- ")
        if tag in ("td", "th"):
            self.out.append(" | ")
        if tag == "a":
            self._href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skipping = max(0, self._skipping - 1)
            return
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag == "a" and self._href:
            href = self._href.pop()
            if href and href.startswith(("http://", "https://")) and not self._skipping:
                self.out.append(f" ({href})")
        if tag in _BLOCK:
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        self.out.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """The readable text of `html`."""
    reducer = _Reducer()
    reducer.feed(html)
    reducer.close()
    text = "".join(reducer.out)
    lines = [line.strip() for line in text.split("\n")]
    # At most one blank line between blocks.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
