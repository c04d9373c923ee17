"""Unified diffs of a file change, for WRITE and DELETE approval requests.

Pure text in, text out: the diff is what the user reads before approving, so it must show
exactly the change the tool would make, or say plainly that it does not. It is built on
the event loop, so its cost is bounded: lines the two sides share at their start and end
are skipped in one pass, only what lies between goes through difflib, and only when that
is small (`_DIFF_LINES`); sides too large even to split into lines (`_SCAN_CHARS`) are
only counted. A diff that would be longer than `DIFF_MAX` keeps its start and says what was
left out: the file itself stays readable (`WorkspaceService.ReadFile`) until the change is
approved. Never reads or writes files itself.
"""

from __future__ import annotations

import difflib
import re

from blitz.size_limits import DIFF_MAX, clip

__all__ = ["unified_diff"]

# Past this many characters on both sides together, lines are only counted.
_SCAN_CHARS = 4 * 1024 * 1024
# The most lines, per side, difflib compares once the common start and end are skipped.
_DIFF_LINES = 5000
# Lines of context around each change, as `diff -u` gives.
_CONTEXT = 3
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified_diff(old: str | None, new: str | None, path: str) -> str:
    """The change from `old` to `new` at `path`; None stands for "no file" on either side."""
    fromfile = f"a/{path}" if old is not None else "/dev/null"
    tofile = f"b/{path}" if new is not None else "/dev/null"
    old_text, new_text = old or "", new or ""
    head = f"--- {fromfile}\n+++ {tofile}\n"
    if len(old_text) + len(new_text) > _SCAN_CHARS:
        return head + _not_shown(old_text, new_text, old is None, new is None)
    a, b = _lines(old_text), _lines(new_text)
    start = _common_start(a, b)
    end = _common_end(a[start:], b[start:])
    if start == len(a) == len(b):
        return ""
    # difflib sees only the changed middle and some lines around it. Where a change lies by
    # a run of equal lines, difflib may place it anywhere in the run: when a hunk then
    # reaches the window's edge with less than its context, the window grows and it runs
    # again, so the diff keeps full context and applies like one of the whole files.
    margin = _CONTEXT
    while True:
        lo, a_hi, b_hi = (
            max(0, start - margin),
            len(a) - max(0, end - margin),
            len(b) - max(0, end - margin),
        )
        if max(a_hi, b_hi) - lo > _DIFF_LINES:
            return head + _not_shown(old_text, new_text, old is None, new is None)
        lines = list(
            difflib.unified_diff(
                a[lo:a_hi], b[lo:b_hi], fromfile=fromfile, tofile=tofile, n=_CONTEXT
            )
        )
        at_start, at_end = lo == 0, a_hi == len(a) and b_hi == len(b)
        if (at_start or _leading(lines) >= _CONTEXT) and (at_end or _trailing(lines) >= _CONTEXT):
            break
        margin *= 4
    text = "".join(_shift(line, lo) for line in lines)
    return clip(text, DIFF_MAX, what="diff")


def _leading(lines: list[str]) -> int:
    """Context lines before the first change of the first hunk."""
    count = 0
    for line in lines[3:]:
        if not line.startswith(" "):
            break
        count += 1
    return count


def _trailing(lines: list[str]) -> int:
    """Context lines after the last change of the last hunk."""
    count = 0
    for line in reversed(lines):
        if not line.startswith(" "):
            break
        count += 1
    return count


def _lines(text: str) -> list[str]:
    # A last line without a newline gets the marker patch(1) expects, so the diff stays valid.
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _common_start(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_end(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def _shift(line: str, offset: int) -> str:
    """A hunk header of the cut-out middle, renumbered for the whole file.

    difflib numbers an empty range by the line before it and any other by its first line,
    both counted from the slice's start, so each moves by the same offset.
    """
    if not offset or not line.startswith("@@ "):
        return line
    match = _HUNK.match(line)
    if match is None:  # pragma: no cover - difflib writes every header this way
        return line
    old_start, old_len, new_start, new_len = match.groups()
    rest = line[match.end() :]
    return (
        f"@@ -{int(old_start) + offset}{old_len or ''} "
        f"+{int(new_start) + offset}{new_len or ''} @@{rest}"
    )


def _not_shown(old: str, new: str, created: bool, deleted: bool) -> str:
    """What stands in for a diff too large to compute: its size and its lines, counted."""
    size = _size(_bytes(old) + _bytes(new))
    old_lines, new_lines = _count_lines(old), _count_lines(new)
    if deleted:
        change = f"all {old_lines:,} lines of the file would be removed"
    elif created:
        change = f"a file of {new_lines:,} lines would be created"
    else:
        change = f"the file's {old_lines:,} lines would become {new_lines:,}"
    return (
        f"# diff of {size} not shown: {change}; "
        "read the file with WorkspaceService.ReadFile before approving\n"
    )


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    return f"{n / 1024:.1f} KB"
