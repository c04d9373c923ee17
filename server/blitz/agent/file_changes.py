"""The tools that change workspace files: `write_file`, `edit_file`, `delete_file`.

Each checks its arguments first (the path gate, `blitz.paths.Workspace`; an edit's match),
so nobody is asked to approve what cannot happen, then passes the policy gate
(`policy.gate_input`), then makes the change on the bounded worker threads of
`blitz.offload.FILE_CALLS` and announces it (`file_changed`). pre_tool hooks are shown the
arguments and `file_path`, the absolute path (as Claude Code's Write and Edit give it), and
may rewrite any of them: the rewritten arguments are checked as the model's are, shown to a
person as the change they make, and are what is changed. A refused or failed change comes
back to the model as an `{"error": ...}` result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext

from blitz.agent.deps import ToolDeps
from blitz.agent.diffs import unified_diff
from blitz.agent.policy import Action, Rewrite, gate_input
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused
from blitz.v1 import turn_pb2

__all__ = ["FILE_ERRORS", "delete_file", "edit_file", "failed", "write_file"]

# What a file call may fail with; each becomes an error result the model reads.
FILE_ERRORS = (PathRefused, OSError, CallTimedOut)


async def write_file(ctx: RunContext[ToolDeps], path: str, content: str) -> dict[str, Any]:
    """Create or replace a file in the workspace with the given content (needs approval).

    Args:
        path: The file's path, relative to the workspace.
        content: The whole new content of the file.
    """
    return await _gated_change(ctx, {"path": path, "content": content}, _write_change)


async def edit_file(
    ctx: RunContext[ToolDeps], path: str, old_string: str, new_string: str
) -> dict[str, Any]:
    """Replace one exact piece of a workspace file with new text (needs approval).

    `old_string` must occur exactly once in the file: include enough surrounding lines to
    make it unique.

    Args:
        path: The file's path, relative to the workspace.
        old_string: The exact text to replace, whitespace included.
        new_string: The text to put in its place.
    """
    args = {"path": path, "old_string": old_string, "new_string": new_string}
    result = await _gated_change(ctx, args, _edit_change)
    if "error" not in result:
        result["replaced"] = 1
    return result


async def delete_file(ctx: RunContext[ToolDeps], path: str) -> dict[str, Any]:
    """Delete a file from the workspace (needs approval).

    Args:
        path: The file's path, relative to the workspace.
    """
    return await _gated_change(ctx, {"path": path}, _delete_change)


@dataclass(frozen=True)
class _Change:
    """A file change a tool has checked: where (`rel`), what the file holds (None: no file
    yet), what it will hold (None: deleted), what a person approves, and the tool's
    arguments that make it."""

    rel: str
    old: bytes | None
    new: str | None
    action: Action
    args: dict[str, Any]


# A file tool's arguments -> the change they make, or the error result the model reads.
_Check = Callable[[RunContext[ToolDeps], dict[str, Any]], Awaitable["_Change | dict[str, Any]"]]


async def _write_change(
    ctx: RunContext[ToolDeps], args: dict[str, Any]
) -> _Change | dict[str, Any]:
    path, content = str(args["path"]), str(args["content"])
    try:
        rel, old = await FILE_CALLS.run(ctx.deps.workspace.current, path)
    except FILE_ERRORS as exc:
        return failed(path, exc, doing="write")
    action = Action(
        turn_pb2.ACTION_KIND_WRITE, rel, f"write: {rel}", unified_diff(_text(old), content, rel)
    )
    return _Change(rel, old, content, action, {"path": rel, "content": content})


async def _edit_change(ctx: RunContext[ToolDeps], args: dict[str, Any]) -> _Change | dict[str, Any]:
    path, old_string, new_string = (str(args[k]) for k in ("path", "old_string", "new_string"))
    try:
        rel, data = await FILE_CALLS.run(ctx.deps.workspace.current, path)
    except FILE_ERRORS as exc:
        return failed(path, exc, doing="edit")
    old = _text(data)
    if old is None:
        return {"path": rel, "error": f"no such file: {rel}"}
    if not old_string:
        return {"path": rel, "error": "old_string is empty; use write_file to create a file"}
    count = old.count(old_string)
    if count == 0:
        return {"path": rel, "error": "old_string was not found in the file"}
    if count > 1:
        return {
            "path": rel,
            "error": f"old_string occurs {count} times; include more context to make it unique",
        }
    new = old.replace(old_string, new_string, 1)
    action = Action(turn_pb2.ACTION_KIND_WRITE, rel, f"write: {rel}", unified_diff(old, new, rel))
    made = {"path": rel, "old_string": old_string, "new_string": new_string}
    return _Change(rel, data, new, action, made)


async def _delete_change(
    ctx: RunContext[ToolDeps], args: dict[str, Any]
) -> _Change | dict[str, Any]:
    path = str(args["path"])
    try:
        rel, old = await FILE_CALLS.run(ctx.deps.workspace.current, path)
    except IsADirectoryError:
        return {"path": path, "error": f"no such file: {path}"}
    except FILE_ERRORS as exc:
        return failed(path, exc, doing="delete")
    if old is None:
        return {"path": path, "error": f"no such file: {path}"}
    diff = unified_diff(_text(old), None, rel)
    action = Action(turn_pb2.ACTION_KIND_DELETE, rel, f"delete: {rel}", diff)
    return _Change(rel, old, None, action, {"path": rel})


async def _gated_change(
    ctx: RunContext[ToolDeps], args: dict[str, Any], check: _Check
) -> dict[str, Any]:
    """Make the change `check` makes of `args` once the gate lets it through. pre_tool
    hooks see the arguments and `file_path`, the absolute path, and may rewrite any of
    them: the rewritten arguments are checked as the model's are (the path gate, the
    edit's match), and the change made is theirs."""
    change = await check(ctx, args)
    if isinstance(change, dict):
        return change
    asked = {"file_path": _absolute(ctx, change.rel), **change.args}

    async def reshape(rewritten: dict[str, Any]) -> tuple[Action, dict[str, Any]] | str:
        got = await check(ctx, _file_args(asked, rewritten))
        if isinstance(got, dict):
            return str(got["error"])
        return got.action, got.args

    refused, rewritten = await gate_input(
        ctx, change.action, tool_input=asked, rewrite=Rewrite(frozenset(asked), reshape)
    )
    if refused:
        return {"path": change.rel, "error": refused}
    if rewritten is not None:
        # A pre_tool hook rewrote it: checked again, as it is made now.
        again = await check(ctx, rewritten)
        if isinstance(again, dict):
            return again
        change = again
    return await _make(ctx, change)


async def _make(ctx: RunContext[ToolDeps], change: _Change) -> dict[str, Any]:
    """Make a change the gate let through."""
    rel, ws = change.rel, ctx.deps.workspace
    # What the file was, for the session's diff: kept before the change, so a write that
    # fails halfway is still covered.
    await ctx.deps.io.before_file_change(rel, change.old)
    if change.new is None:
        try:
            await FILE_CALLS.run(ws.delete, rel)
        except FILE_ERRORS as exc:
            return failed(rel, exc, doing="delete")
        _changed(ctx, rel, turn_pb2.FileChanged.KIND_DELETED)
        return {"path": rel, "deleted": True}
    data = change.new.encode()
    try:
        # `rel` is where the user approved the write; it is written there or not at all.
        await FILE_CALLS.run(ws.write, rel, data)
    except FILE_ERRORS as exc:
        return failed(rel, exc, doing="write")
    created = change.old is None
    kind = turn_pb2.FileChanged.KIND_CREATED if created else turn_pb2.FileChanged.KIND_MODIFIED
    _changed(ctx, rel, kind)
    return {"path": rel, "bytes": len(data)}


def _file_args(asked: Mapping[str, Any], rewritten: Mapping[str, Any]) -> dict[str, Any]:
    """A file tool's arguments from its input as a hook rewrote it: the path is
    `file_path` where the hook changed that (Claude Code's hooks know no other), else
    `path`."""
    args = {key: rewritten[key] for key in asked if key != "file_path"}
    if rewritten.get("file_path") != asked["file_path"]:
        args["path"] = rewritten["file_path"]
    return args


def _changed(ctx: RunContext[ToolDeps], rel: str, kind: turn_pb2.FileChanged.Kind) -> None:
    """Announce a change a file tool made (`file_changed`), once it is made."""
    changed = turn_pb2.FileChanged(path=rel, kind=kind, tool_call_id=ctx.tool_call_id or "")
    ctx.deps.io.emit(turn_pb2.TurnEvent(file_changed=changed))


# What a file call may fail with; each becomes an error result the model reads.
def _absolute(ctx: RunContext[ToolDeps], rel: str) -> str:
    """A workspace path as Claude Code's hooks read `file_path`: absolute (the workspace
    is at its own path in the command box too)."""
    return str(ctx.deps.workspace.root / rel)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode(errors="replace")


def failed(
    path: str, exc: Exception, *, doing: str, missing: str = "no such file"
) -> dict[str, Any]:
    """A failed file call as the model sees it: in our words, never a traceback."""
    if isinstance(exc, PathRefused):
        error = str(exc)
    elif isinstance(exc, CallTimedOut):
        error = f"could not {doing}: the file system did not answer in time"
    elif isinstance(exc, IsADirectoryError):
        error = f"{path} is a directory"
    elif isinstance(exc, FileNotFoundError | NotADirectoryError):
        error = f"{missing}: {path}"
    else:
        error = f"could not {doing}: {getattr(exc, 'strerror', None) or exc}"
    return {"path": path, "error": error}
