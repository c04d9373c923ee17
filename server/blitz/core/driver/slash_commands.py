"""Server commands: a turn whose text is `/help`, `/usage`, `/tasks`, `/compact`, `/clear`
or `/model`, answered by the server rather than sent to the model as a prompt.

A command is still a turn, with `accepted` first and `finished` last, so every client sees
it the same way. Only `/compact` calls the model (to summarise), and its call is in the
ledger like any other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from blitz.core.usage import session_usage
from blitz.errors import invalid_argument
from blitz.ports import AgentPort, TurnIO
from blitz.store import SessionChange, Store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["COMMANDS", "CommandContext", "advertised", "parse_command", "run_command"]

COMMANDS: dict[str, str] = {
    "help": "list these commands",
    "usage": "the session's tokens and cost so far",
    "tasks": "the agent's current task list",
    "compact": "summarise the conversation so far to free the model's context window",
    "clear": "forget the conversation so far (the event log is kept)",
    "model": "show the session's model, or switch it: /model provider:name",
    "run": "run a workflow (docs/workflows.md): /run NAME key=value …",
    "push": "push a session from a repository's changes as a new branch, once approved"
    " (a commit message on the lines below: one commit)",
}
# How each command's arguments are written, for those that take any.
_ARGUMENTS: dict[str, str] = {
    "model": "[provider:name]",
    "run": "NAME [key=value …]",
    "push": "[BRANCH]",
}


def advertised() -> list[s.SlashCommand]:
    """The commands as GetServerInfo and ListCommands offer them to clients."""
    return [
        s.SlashCommand(name=name, description=what, arguments=_ARGUMENTS.get(name, ""))
        for name, what in COMMANDS.items()
    ]


def parse_command(text: str) -> tuple[str, str]:
    """`/name args` into (name, args); INVALID_ARGUMENT on `turn.text` when unknown."""
    # The name ends at the first space or line break (`/push BRANCH` then a message).
    head, rest = [*text.strip().split(None, 1), ""][:2]
    name = head.removeprefix("/").lower()
    if not head.startswith("/") or name not in COMMANDS:
        known = ", ".join("/" + c for c in COMMANDS)
        raise invalid_argument("turn.text", f"unknown command {head!r}; known: {known}")
    return name, rest.strip()


@dataclass
class CommandContext:
    """What a command may touch: the store, the session, the agent and the turn's IO."""

    store: Store
    session_id: str
    model: str
    io: TurnIO
    agent: AgentPort


def _tasks_text(tasks: t.Tasks) -> str:
    marks = {"completed": "x", "in_progress": "~"}
    return "\n".join(f"- [{marks.get(i.status, ' ')}] {i.content}" for i in tasks.items)


async def run_command(name: str, arg: str, ctx: CommandContext) -> str:
    """Carry out one command; returns the turn's output text."""
    store = ctx.store
    if name == "help":
        return "\n".join(f"/{command}: {what}" for command, what in COMMANDS.items())
    if name == "usage":
        u = await session_usage(store, ctx.session_id)
        cost = f"${u.cost_usd:.4f}" + ("" if u.priced else " (some prices unknown)")
        return (
            f"{u.calls} model calls; tokens: {u.input} input, {u.cached} cached, "
            f"{u.cache_write} cache write, {u.output} output; cost {cost}"
        )
    if name == "tasks":
        session = await store.get_session(ctx.session_id)
        raw = session.tasks if session is not None else None
        tasks = t.Tasks.FromString(raw) if raw else t.Tasks()
        if not tasks.items:
            return "No tasks."
        ctx.io.emit(t.TurnEvent(tasks=tasks))
        return _tasks_text(tasks)
    if name == "clear":
        await store.set_history(ctx.session_id, b"")
        await store.update_session(ctx.session_id, SessionChange(update_time=time.time(), plan=b""))
        return "Conversation cleared: the next turn starts afresh."
    if name == "compact":
        history = await store.get_history(ctx.session_id)
        if not history:
            return "Nothing to compact yet."
        compacted, summary = await ctx.agent.compact(io=ctx.io, model=ctx.model, history=history)
        await store.set_history(ctx.session_id, compacted)
        return f"Conversation compacted. Summary:\n{summary}"
    if name == "run":  # carried out by the turn driver's workflow runs (workflow_runs.py)
        raise invalid_argument("turn.text", "/run is not served here")
    # model
    if not arg:
        return f"Model: {ctx.model}"
    ctx.agent.validate_model(arg)
    await store.update_session(ctx.session_id, SessionChange(update_time=time.time(), model=arg))
    return f"Model switched from {ctx.model} to {arg}."
