"""The workspace tools the agent offers the model, as a pydantic-ai toolset.

Every tool acts inside the session's workspace and nowhere else: paths go through
`Workspace.resolve`, and a refused path or a failed action comes back to the model as an
`{"error": ...}` result rather than an exception, so one bad call never ends the turn.
Actions that change things ask first: they raise pydantic-ai's `ApprovalRequired` (carrying
what the `ApprovalRequest` shows) unless the call was already approved; `ask_user` parks
with `CallDeferred(kind="question")`. Tools never decide policy (rules, read-only mode):
that is the core's, through how it answers the requests.

The file tools are plain functions on purpose: pydantic-ai runs those in a worker thread, so
a large read or write never stalls the event loop that streams every session's events. The
tools that talk to `TurnIO` (`todo`) or await (`run_command`, `ask_user`) stay async, since
`TurnIO` is not thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.toolsets import FunctionToolset

from blitz.agent.commands import run_shell
from blitz.agent.contract import TurnIO
from blitz.agent.diffs import unified_diff
from blitz.agent.workspace import PathRefused, Workspace
from blitz.v1 import turn_pb2

__all__ = [
    "DEFAULT_COMMAND_ENV",
    "QUESTION_TOOL",
    "ToolDeps",
    "approval_metadata",
    "question_metadata",
    "workspace_toolset",
]

# What a command sees of the world: a plain PATH and a UTF-8 locale; HOME is the workspace.
DEFAULT_COMMAND_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}

# The tool that asks the user; its deferred calls are questions, all others approvals.
QUESTION_TOOL = "ask_user"

# A directory listing longer than this is cut, and says so.
_MAX_ENTRIES = 1000


@dataclass
class ToolDeps:
    """What the tools of one agent run act with (pydantic-ai's `deps`)."""

    io: TurnIO
    workspace: Workspace
    command_timeout: float
    output_cap: int
    command_env: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_COMMAND_ENV))


@dataclass
class TodoItem:
    """One entry of the task list."""

    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"


def approval_metadata(kind: int, *, detail: str, diff: str, scope_label: str) -> dict[str, Any]:
    """What travels in `ApprovalRequired.metadata`, for the runner to build the request."""
    return {"kind": int(kind), "detail": detail, "diff": diff, "scope_label": scope_label}


def question_metadata(question: str, options: list[str], multi_select: bool) -> dict[str, Any]:
    """What travels in `CallDeferred.metadata` for a question."""
    return {"question": question, "options": list(options), "multi_select": multi_select}


async def run_command(ctx: RunContext[ToolDeps], command: str) -> dict[str, Any]:
    """Run a shell command in the workspace (needs the user's approval).

    Args:
        command: The command line, run with /bin/sh in the workspace folder.
    """
    if not ctx.tool_call_approved:
        raise ApprovalRequired(
            approval_metadata(
                turn_pb2.ACTION_KIND_COMMAND,
                detail=command,
                diff="",
                scope_label=f"command: {command}",
            )
        )
    deps = ctx.deps
    env = dict(deps.command_env)
    # HOME is the workspace, so tools that write dotfiles write them where the session may.
    env["HOME"] = str(deps.workspace.root)
    try:
        outcome = await run_shell(
            command,
            cwd=deps.workspace.root,
            env=env,
            time_limit=deps.command_timeout,
            output_cap=deps.output_cap,
        )
    except OSError as exc:
        return {"command": command, "error": f"could not start the command: {exc.strerror}"}
    return outcome.as_result()


def write_file(ctx: RunContext[ToolDeps], path: str, content: str) -> dict[str, Any]:
    """Create or replace a file in the workspace with the given content (needs approval).

    Args:
        path: The file's path, relative to the workspace.
        content: The whole new content of the file.
    """
    ws = ctx.deps.workspace
    try:
        real = ws.resolve(path)
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    if real.is_dir():
        return {"path": path, "error": f"{path} is a directory"}
    rel = ws.relative(real)
    if not ctx.tool_call_approved:
        old = real.read_text(errors="replace") if real.exists() else None
        raise ApprovalRequired(
            approval_metadata(
                turn_pb2.ACTION_KIND_WRITE,
                detail=rel,
                diff=unified_diff(old, content, rel),
                scope_label=f"write: {rel}",
            )
        )
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode()
        real.write_bytes(data)
    except OSError as exc:
        return {"path": rel, "error": f"could not write: {exc.strerror}"}
    return {"path": rel, "bytes": len(data)}


def delete_file(ctx: RunContext[ToolDeps], path: str) -> dict[str, Any]:
    """Delete a file from the workspace (needs approval).

    Args:
        path: The file's path, relative to the workspace.
    """
    ws = ctx.deps.workspace
    try:
        real = ws.resolve(path)
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    if not real.is_file():
        return {"path": path, "error": f"no such file: {path}"}
    rel = ws.relative(real)
    if not ctx.tool_call_approved:
        raise ApprovalRequired(
            approval_metadata(
                turn_pb2.ACTION_KIND_DELETE,
                detail=rel,
                diff=unified_diff(real.read_text(errors="replace"), None, rel),
                scope_label=f"delete: {rel}",
            )
        )
    try:
        real.unlink()
    except OSError as exc:
        return {"path": rel, "error": f"could not delete: {exc.strerror}"}
    return {"path": rel, "deleted": True}


def read_file(ctx: RunContext[ToolDeps], path: str) -> dict[str, Any]:
    """Read a text file from the workspace.

    Args:
        path: The file's path, relative to the workspace.
    """
    ws = ctx.deps.workspace
    try:
        real = ws.resolve(path)
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    if not real.is_file():
        return {"path": path, "error": f"no such file: {path}"}
    cap = ctx.deps.output_cap
    try:
        with real.open("rb") as f:
            data = f.read(cap + 1)
    except OSError as exc:
        return {"path": path, "error": f"could not read: {exc.strerror}"}
    return {
        "path": ws.relative(real),
        "content": data[:cap].decode("utf-8", errors="replace"),
        "truncated": len(data) > cap,
    }


def list_files(ctx: RunContext[ToolDeps], path: str = ".") -> dict[str, Any]:
    """List a folder of the workspace; folder names end with '/'.

    Args:
        path: The folder, relative to the workspace; the workspace itself by default.
    """
    ws = ctx.deps.workspace
    try:
        real = ws.resolve(path)
    except PathRefused as exc:
        return {"path": path, "error": str(exc)}
    if not real.is_dir():
        return {"path": path, "error": f"no such folder: {path}"}
    try:
        children = sorted(real.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        return {"path": path, "error": f"could not list: {exc.strerror}"}
    entries = [c.name + "/" if c.is_dir() else c.name for c in children[:_MAX_ENTRIES]]
    return {
        "path": ws.relative(real),
        "entries": entries,
        "truncated": len(children) > _MAX_ENTRIES,
    }


async def todo(ctx: RunContext[ToolDeps], items: list[TodoItem]) -> dict[str, Any]:
    """Replace your task list with these items, to show the user your plan and progress.

    Args:
        items: The whole list, in order; status is pending, in_progress or completed.
    """
    tasks = [turn_pb2.Task(content=item.content, status=item.status) for item in items]
    ctx.deps.io.emit(turn_pb2.TurnEvent(tasks=turn_pb2.Tasks(items=tasks)))
    return {"tasks": len(tasks)}


async def ask_user(
    ctx: RunContext[ToolDeps],
    question: str,
    options: list[str] | None = None,
    multi_select: bool = False,
) -> dict[str, Any]:
    """Ask the user a question and wait for the answer.

    Args:
        question: The question.
        options: When given, the answers the user may choose from.
        multi_select: Whether several options may be chosen.
    """
    raise CallDeferred(question_metadata(question, options or [], multi_select), kind="question")


def workspace_toolset() -> FunctionToolset[ToolDeps]:
    """The tools every Blitz agent offers."""
    return FunctionToolset[ToolDeps](
        [run_command, write_file, delete_file, read_file, list_files, todo, ask_user]
    )
