"""The `search` tool: grep-like text search over the workspace's files, no approval.

Walks the workspace (or a folder of it) through the path gate (`Workspace.files`) and reports
matching lines as `path:line: text`. It skips what a developer's grep would (`.git` and
similar folders, binary files, very large files), follows no link at all, reads no fifo,
device or hard-linked file, and caps what it returns, saying so.

Since it needs no approval, anything a model writes runs: so the pattern runs on RE2
(`google-re2`), whose time is linear in the text whatever the pattern (Python's `re` can
backtrack for minutes and holds the GIL while it does), and the whole search runs on a
worker thread (`FILE_CALLS`) within a time budget (`ToolSettings.search_budget`), stopping
with what it found when the budget is spent. It only reads; it must never write, run or
fetch anything.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import time
from typing import Any

import re2
from pydantic_ai import RunContext

from blitz.agent.deps import ToolDeps
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace

__all__ = ["search"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".tox"})
_MAX_MATCHES = 200
_MAX_LINE = 300
_MAX_FILE_BYTES = 2 * 2**20
_MAX_PATTERN = 1000
# RE2's memory for one compiled pattern; a pattern that needs more is refused.
_PATTERN_MEMORY = 8 << 20


class _Refused(Exception):
    """A pattern the search will not run; the message says why, for the model."""


async def search(
    ctx: RunContext[ToolDeps],
    pattern: str,
    path: str = ".",
    glob: str = "",
    regex: bool = False,
    ignore_case: bool = False,
) -> dict[str, Any]:
    """Search the workspace's text files for lines containing a pattern.

    Symbolic links are not followed, and `.git`, `node_modules` and similar folders, binary
    files and files over 2 MiB are skipped.

    Args:
        pattern: The text to look for (an RE2 regular expression when `regex` is true: no
            backreferences or lookaround).
        path: The folder (or file) to search, relative to the workspace.
        glob: Only files whose name matches this pattern, e.g. "*.py".
        regex: Whether `pattern` is a regular expression rather than plain text.
        ignore_case: Whether to ignore letter case.
    """
    if not pattern:
        return {"error": "the pattern is empty"}
    if len(pattern) > _MAX_PATTERN:
        return {"error": f"the pattern is longer than {_MAX_PATTERN} characters"}
    ws = ctx.deps.workspace
    try:
        return await FILE_CALLS.run(
            _search, ws, pattern, path, glob, regex, ignore_case, ctx.deps.settings.search_budget
        )
    except _Refused as exc:
        return {"pattern": pattern, "error": str(exc)}
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    except (FileNotFoundError, NotADirectoryError):
        return {"path": path, "error": f"no such file or folder: {path}"}
    except CallTimedOut:
        return {"pattern": pattern, "error": "the workspace's files did not answer in time"}
    except OSError as exc:
        return {"path": path, "error": f"could not search: {exc.strerror}"}


def _search(
    ws: Workspace,
    pattern: str,
    path: str,
    glob: str,
    regex: bool,
    ignore_case: bool,
    budget: float,
) -> dict[str, Any]:
    """The whole search, on a worker thread."""
    deadline = time.monotonic() + budget
    matcher = _compile(pattern, regex=regex, ignore_case=ignore_case)
    matches: list[str] = []
    full = late = False
    with contextlib.closing(ws.files(path, limit=_MAX_FILE_BYTES, skip=_SKIP_DIRS)) as files:
        for file in files:
            if glob and not fnmatch.fnmatch(file.path.rsplit("/", 1)[-1], glob):
                continue
            if b"\x00" in file.data[:8192]:
                continue  # binary
            for number, line in enumerate(file.data.split(b"\n"), start=1):
                if late := time.monotonic() > deadline:
                    break
                if not matcher.search(line):
                    continue
                if full := len(matches) >= _MAX_MATCHES:
                    break
                text = line.decode("utf-8", errors="replace").rstrip("\r")
                text = text if len(text) <= _MAX_LINE else text[:_MAX_LINE] + "…"
                matches.append(f"{file.path}:{number}: {text}")
            if full or late:
                break
    result: dict[str, Any] = {"pattern": pattern, "matches": matches, "truncated": full or late}
    if late:
        result["error"] = (
            f"the search took longer than {budget:g} s and stopped; narrow it with path or glob"
        )
    return result


def _compile(pattern: str, *, regex: bool, ignore_case: bool) -> Any:
    """The pattern on RE2, or `_Refused` in words a model can act on."""
    if regex:
        # Python's parser first: its errors say where, and tell "not a regular expression"
        # apart from "a feature RE2 does not have". Parsing is linear; matching is not.
        try:
            re.compile(pattern)
        except re.error as exc:
            where = f" (near position {exc.pos})" if exc.pos is not None else ""
            raise _Refused(f"not a valid regular expression{where}") from None
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _PATTERN_MEMORY
    options.literal = not regex
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        raise _Refused(
            f"the search cannot use this pattern ({detail}): it runs RE2, which has no "
            "backreferences or lookaround"
        ) from None
