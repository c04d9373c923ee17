"""Unified diffs of a file change, for WRITE and DELETE approval requests.

Pure text in, text out: the diff is what the user reads before approving, so it must show
exactly the change the tool would make. Never reads or writes files itself.
"""

from __future__ import annotations

import difflib

__all__ = ["unified_diff"]


def unified_diff(old: str | None, new: str | None, path: str) -> str:
    """The change from `old` to `new` at `path`; None stands for "no file" on either side."""
    fromfile = f"a/{path}" if old is not None else "/dev/null"
    tofile = f"b/{path}" if new is not None else "/dev/null"
    lines = difflib.unified_diff(
        _lines(old or ""), _lines(new or ""), fromfile=fromfile, tofile=tofile
    )
    return "".join(lines)


def _lines(text: str) -> list[str]:
    # A last line without a newline gets the marker patch(1) expects, so the diff stays valid.
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
