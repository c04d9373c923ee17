"""The workspace tools the agent offers the model, as pydantic-ai toolsets.

Every tool acts inside the session's workspace and nowhere else: paths go through the path
gate (`blitz.paths.Workspace`), which decides where a path leads and then opens it without
following a link, refusing hard-linked files, fifos and devices. A refused path, a refused
action or a failed one comes back to the model as an `{"error": ...}` result rather than an
exception, so one bad call never ends the turn. Actions that change things pass the policy
gate first (`policy.gate`: refuse under plan, read_only or aside; go ahead when approved or
covered by a rule; otherwise park on an `ApprovalRequest`), and only after the path gate
has looked at the file, so nobody is asked to approve what cannot happen. `ask_user`
parks with `CallDeferred(kind="question")`.

File work runs on the bounded worker threads of `blitz.offload.FILE_CALLS`, within a time
limit, so neither a large file nor one that blocks stalls the event loop that streams every
session's events, and a stuck call holds one of a few threads, not the turn;
`TurnIO` is touched only from the loop.

`run_command` shows its output while it runs: each piece arrives as a `tool_output`
event with the command's call id and the piece in `output`, in order, between the
command's `tool_call` and its final `tool_result`, which carries the whole (capped) output
and is what a client should keep. The call id tells two commands running at once apart,
and a sub-agent's output is signed with its name like the rest of its events.

The tools that change files (`write_file`, `edit_file`, `delete_file`) are
file_changes.py's; they announce each file they create, change or delete with a
`file_changed` event, after the change is made.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.toolsets import FunctionToolset

from blitz.agent.deps import ToolDeps
from blitz.agent.fetch import fetch_url
from blitz.agent.file_changes import FILE_ERRORS, delete_file, edit_file, failed, write_file
from blitz.agent.policy import PLAN_TOOLS, Action, Rewrite, gate_input
from blitz.agent.search import search
from blitz.agent.shell import run_shell
from blitz.agent.tasks import TodoItem
from blitz.forms import form_problem
from blitz.offload import FILE_CALLS
from blitz.v1 import turn_pb2

__all__ = [
    "QUESTION_TOOL",
    "question_metadata",
    "workspace_toolset",
]

# The tool that asks the user; its deferred calls are questions, all others approvals.
QUESTION_TOOL = "ask_user"

# A directory listing longer than this is cut, and says so.
_MAX_ENTRIES = 1000


def question_metadata(
    question: str,
    options: list[str],
    multi_select: bool,
    task_id: str = "",
    form: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What travels in `CallDeferred.metadata` for a question."""
    return {
        "question": question,
        "options": list(options),
        "multi_select": multi_select,
        "task_id": task_id,
        **({"form": form} if form else {}),
    }


async def run_command(
    ctx: RunContext[ToolDeps], command: str, network: bool = False, git: bool = False
) -> dict[str, Any]:
    """Run a shell command in the workspace (needs the user's approval).

    It runs in a sandbox: the workspace is the only place it can write, and it has no
    network unless `network` is set (then the user approves the network too).

    Args:
        command: The command line, run with /bin/sh in the workspace folder.
        network: The command needs the network (downloads, package installs, git push).
        git: The command writes the workspace's `.git` (commit, checkout, merge).
    """
    if "\x00" in command:
        # The shell would run only what comes before it: not what anyone approved.
        return {"command": command, "error": "a command cannot contain a NUL character"}
    action = command_action(command, network=network, git=git)
    asked = {"command": command, "network": network, "git": git}

    async def reshape(rewritten: dict[str, Any]) -> tuple[Action, dict[str, Any]] | str:
        line = str(rewritten["command"])
        if "\x00" in line:
            return "a command cannot contain a NUL character"
        args = {"command": line, "network": network, "git": git}
        return command_action(line, network=network, git=git), args

    refused, rewritten = await gate_input(
        ctx, action, tool_input=asked, rewrite=Rewrite(frozenset({"command"}), reshape)
    )
    if refused:
        return {"command": command, "error": refused}
    if rewritten is not None:
        # A pre_tool hook rewrote it: what runs is the hook's command (docs/hooks.md).
        command = str(rewritten["command"])
    deps = ctx.deps
    settings = deps.settings
    env = dict(settings.command_env)
    # HOME is the workspace, so tools that write dotfiles write them where the session may.
    env["HOME"] = str(deps.workspace.root)
    emit = deps.io.emit
    call_id = ctx.tool_call_id or ""

    def show(text: str) -> None:
        emit(
            turn_pb2.TurnEvent(
                tool_output=turn_pb2.ToolOutput(id=call_id, name="run_command", output=text)
            )
        )

    await deps.io.before_change()  # the turn's start checkpoint, before its first change
    try:
        outcome = await run_shell(
            command,
            cwd=deps.workspace.root,
            env=env,
            time_limit=settings.command_timeout,
            output_cap=settings.output_cap,
            on_output=show,
            sandbox=settings.sandbox,
            network=network,
            writable=git,
        )
    except OSError as exc:
        return {"command": command, "error": f"could not start the command: {exc.strerror}"}
    return outcome.as_result()


def command_action(command: str, *, network: bool, git: bool) -> Action:
    """What a command's approval shows: a NETWORK approval when it needs the network (the
    rule it may leave covers this command with network, nothing else), else a COMMAND one;
    its scope says what the box lets it do beside the workspace."""
    extras = "".join(flag for flag, on in (("+network", network), ("+git", git)) if on)
    kind = turn_pb2.ACTION_KIND_NETWORK if network else turn_pb2.ACTION_KIND_COMMAND
    detail = command + (" (with network)" if network else "") + (" (may write .git)" if git else "")
    return Action(kind, detail, f"command{extras}: {command}", runs=True)


async def read_file(ctx: RunContext[ToolDeps], path: str) -> dict[str, Any]:
    """Read a text file from the workspace.

    Args:
        path: The file's path, relative to the workspace.
    """
    ws = ctx.deps.workspace
    cap = ctx.deps.settings.output_cap
    try:
        got = await FILE_CALLS.run(ws.read, path, cap + 1)
    except FILE_ERRORS as exc:
        return failed(path, exc, doing="read")
    return {
        "path": got.path,
        "content": got.data[:cap].decode("utf-8", errors="replace"),
        "truncated": len(got.data) > cap,
    }


async def list_files(ctx: RunContext[ToolDeps], path: str = ".") -> dict[str, Any]:
    """List a folder of the workspace; folder names end with '/', symbolic links with '@'.

    Symbolic links are listed as links, not followed into.

    Args:
        path: The folder, relative to the workspace; the workspace itself by default.
    """
    ws = ctx.deps.workspace
    try:
        listing = await FILE_CALLS.run(ws.entries, path)
    except FILE_ERRORS as exc:
        return failed(path, exc, doing="list", missing="no such folder")
    entries = [e.name + _MARKS.get(e.kind, "") for e in listing.entries[:_MAX_ENTRIES]]
    return {
        "path": listing.path,
        "entries": entries,
        "truncated": len(listing.entries) > _MAX_ENTRIES,
    }


async def todo(ctx: RunContext[ToolDeps], items: list[TodoItem]) -> dict[str, Any]:
    """Replace your task list with these items, to show the user your plan and progress.

    Mark the item you are working on in_progress (one at a time) and finished ones
    completed. The result gives each item its id: pass it back when updating the item.

    Args:
        items: The whole list, in order; status is pending, in_progress or completed.
    """
    tasks = ctx.deps.tasks
    listed = tasks.replace(items)
    ctx.deps.io.emit(turn_pb2.TurnEvent(tasks=turn_pb2.Tasks(items=listed)))
    # The ids travel in the result, so the list can be rebuilt from the history alone.
    return {"tasks": tasks.as_result()}


async def ask_user(
    ctx: RunContext[ToolDeps],
    question: str,
    options: list[str] | None = None,
    multi_select: bool = False,
    form: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Ask the user a question and wait for the answer.

    Args:
        question: The question.
        options: When given, the answers the user may choose from.
        multi_select: Whether several options may be chosen.
        form: Instead of options, a form for the user to fill in: a JSON Schema of a flat
            object whose properties are strings (optionally with an enum or a format:
            email, uri, date, date-time), numbers, integers, booleans, or arrays of
            strings from an enum; "required" lists those that must be given. The answer
            is then its values.
    """
    if ctx.deps.policy.aside:
        # An aside runs beside another turn and must not park waiting for the user.
        return {"error": "this is a side question: ask in your answer instead of waiting"}
    if form and (problem := form_problem(form)):
        return {"error": f"the form is not one the user can be shown: {problem}"}
    metadata = question_metadata(
        question, options or [], multi_select, ctx.deps.tasks.current(), form=form
    )
    raise CallDeferred(metadata, kind="question")


_ALL_TOOLS = (
    run_command,
    write_file,
    edit_file,
    delete_file,
    read_file,
    list_files,
    search,
    fetch_url,
    todo,
    ask_user,
)


def workspace_toolset(*, plan: bool = False) -> FunctionToolset[ToolDeps]:
    """The tools a Blitz agent offers; in plan mode only those that change nothing."""
    tools = [t for t in _ALL_TOOLS if not plan or t.__name__ in PLAN_TOOLS]
    return FunctionToolset[ToolDeps](tools)


# How list_files marks what is not a plain file.
_MARKS = {"folder": "/", "link": "@"}
