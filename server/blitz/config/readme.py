"""`python -m blitz.config.readme`: rewrite the README's settings table from the settings.

`make docs` runs it; a test fails when the README's table differs from what it writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from blitz.config.render import markdown_table

__all__ = ["with_table"]

_BLOCK = re.compile(r"(<!-- settings: [^\n]*-->\n).*?(<!-- settings: end -->)", re.S)


def with_table(readme: str) -> str:
    """`readme` with the block between the settings markers replaced by the table."""
    if not _BLOCK.search(readme):
        raise ValueError("the README has no settings markers")
    return _BLOCK.sub(lambda m: m.group(1) + markdown_table() + m.group(2), readme)


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    path.write_text(with_table(path.read_text()))
