"""The README's fenced examples, found the way the tests that run them need them."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def block(after_heading: str, lang: str) -> str:
    """The first fenced block of `lang` after the heading that starts with `after_heading`."""
    section = README[README.index(after_heading) :]
    match = re.search(rf"^(`{{3,4}}){lang}\n(.*?)^\1$", section, re.S | re.M)
    assert match, f"no {lang} block after {after_heading!r}"
    return match.group(2)
