"""The `search` tool: grep-like text search over the workspace's files, no approval.

Walks the workspace (or a folder of it) and reports matching lines as `path:line: text`.
It skips what a developer's grep would (`.git` and similar folders, binary files, very large
files), never follows a symlink out of the workspace, and caps what it returns, saying so.
It only reads; it must never write, run or fetch anything.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext

from blitz.agent.deps import ToolDeps
from blitz.paths import PathRefused, Workspace

__all__ = ["search"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".tox"})
_MAX_MATCHES = 200
_MAX_LINE = 300
_MAX_FILE_BYTES = 2 * 2**20


def search(
    ctx: RunContext[ToolDeps],
    pattern: str,
    path: str = ".",
    glob: str = "",
    regex: bool = False,
    ignore_case: bool = False,
) -> dict[str, Any]:
    """Search the workspace's text files for lines containing a pattern.

    Args:
        pattern: The text to look for (a Python regular expression when `regex` is true).
        path: The folder (or file) to search, relative to the workspace.
        glob: Only files whose name matches this pattern, e.g. "*.py".
        regex: Whether `pattern` is a regular expression rather than plain text.
        ignore_case: Whether to ignore letter case.
    """
    ws = ctx.deps.workspace
    if not pattern:
        return {"error": "the pattern is empty"}
    try:
        real = ws.resolve(path)
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    flags = re.IGNORECASE if ignore_case else 0
    try:
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        where = f" (near position {exc.pos})" if exc.pos is not None else ""
        return {"pattern": pattern, "error": f"not a valid regular expression{where}"}
    matches: list[str] = []
    truncated = False
    for file in _files(ws, real, glob):
        for number, line in _matching_lines(file, matcher):
            if len(matches) >= _MAX_MATCHES:
                truncated = True
                break
            text = line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + "…"
            matches.append(f"{ws.relative(file)}:{number}: {text}")
        if truncated:
            break
    return {"pattern": pattern, "matches": matches, "truncated": truncated}


def _files(ws: Workspace, start: Path, glob: str) -> list[Path]:
    if start.is_file():
        return [start]
    found: list[Path] = []
    for folder, dirs, names in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if glob and not fnmatch.fnmatch(name, glob):
                continue
            file = Path(folder) / name
            # A symlink may lead out of the workspace; resolve says where it really goes.
            try:
                file = ws.resolve(str(file))
            except PathRefused:
                continue
            found.append(file)
    return found


def _matching_lines(file: Path, matcher: re.Pattern[str]) -> list[tuple[int, str]]:
    try:
        if not file.is_file() or file.stat().st_size > _MAX_FILE_BYTES:
            return []
        data = file.read_bytes()
    except OSError:
        return []
    if b"\x00" in data[:8192]:
        return []  # binary
    text = data.decode("utf-8", errors="replace")
    return [
        (n, line.rstrip("\r"))
        for n, line in enumerate(text.split("\n"), start=1)
        if matcher.search(line)
    ]
