"""A session's diff: each file its agent's file tools changed, from before to now.

The agent's write, edit and delete tools hand the core what a file held just before they
change it (`TurnIO.before_file_change`); the store keeps the first per session and path
(`Store.keep_original`). The diff compares each original with the file as it is now.
Commands the agent runs (`run_command`) can change files too, and those changes are not
covered unless a file tool touched the same file too: what is recorded is the file
tools' work, not the folder's.

Pure functions over the originals and a reader of the current content; nothing here
touches the store or the disk itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from blitz.size_limits import clip
from blitz.store import FileOriginal

__all__ = ["SessionDiff", "session_diff"]

# The first bytes of a file that say it is binary (as git decides it).
_SNIFF = 8000


@dataclass(frozen=True)
class SessionDiff:
    diff: str
    paths: list[str]
    truncated: bool


def session_diff(
    originals: Sequence[FileOriginal],
    current: Callable[[str], bytes | None],
    *,
    limit: int,
) -> SessionDiff:
    """The unified diff of every original against `current(path)` (None: no file now),
    file by file in path order, cut at `limit` characters with a note."""
    parts: list[str] = []
    paths: list[str] = []
    for original in sorted(originals, key=lambda o: o.path):
        now = current(original.path)
        if now == original.content:
            continue
        paths.append(original.path)
        parts.append(_file_diff(original.path, original.content, now))
    whole = "".join(parts)
    cut = clip(whole, limit, what="diff")
    return SessionDiff(diff=cut, paths=paths, truncated=cut != whole)


def _file_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    old_name = "/dev/null" if before is None else f"a/{path}"
    new_name = "/dev/null" if after is None else f"b/{path}"
    if _binary(before) or _binary(after):
        return f"Binary files {old_name} and {new_name} differ\n"
    lines = difflib.unified_diff(_lines(before), _lines(after), fromfile=old_name, tofile=new_name)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:_SNIFF]


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode(errors="replace").splitlines(keepends=True)
