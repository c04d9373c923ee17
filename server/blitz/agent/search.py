"""The `search` tool: grep-like text search over the workspace's files, no approval.

Walks the workspace (or a folder of it) through the path gate (`Workspace.files`) and reports
matching lines as `path:line: text`. It skips what a developer's grep would (`.git` and
similar folders, binary files, very large files), follows no link at all, reads no fifo,
device or hard-linked file, and caps what it returns, saying so. It only reads; it must
never write, run or fetch anything.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from typing import Any

from pydantic_ai import RunContext

from blitz.agent.deps import ToolDeps
from blitz.paths import PathRefused

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

    Symbolic links are not followed, and `.git`, `node_modules` and similar folders, binary
    files and files over 2 MiB are skipped.

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
    flags = re.IGNORECASE if ignore_case else 0
    try:
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        where = f" (near position {exc.pos})" if exc.pos is not None else ""
        return {"pattern": pattern, "error": f"not a valid regular expression{where}"}
    matches: list[str] = []
    truncated = False
    try:
        with contextlib.closing(ws.files(path, limit=_MAX_FILE_BYTES, skip=_SKIP_DIRS)) as files:
            for file in files:
                if glob and not fnmatch.fnmatch(file.path.rsplit("/", 1)[-1], glob):
                    continue
                if b"\x00" in file.data[:8192]:
                    continue  # binary
                for number, line in enumerate(file.data.split(b"\n"), start=1):
                    text = line.decode("utf-8", errors="replace")
                    if not matcher.search(text):
                        continue
                    if truncated := len(matches) >= _MAX_MATCHES:
                        break
                    text = text.rstrip("\r")
                    text = text if len(text) <= _MAX_LINE else text[:_MAX_LINE] + "…"
                    matches.append(f"{file.path}:{number}: {text}")
                if truncated:
                    break
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    except (FileNotFoundError, NotADirectoryError):
        return {"path": path, "error": f"no such file or folder: {path}"}
    except OSError as exc:
        return {"path": path, "error": f"could not search: {exc.strerror}"}
    return {"pattern": pattern, "matches": matches, "truncated": truncated}
