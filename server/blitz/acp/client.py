"""What an ACP agent asks of Blitz: the SDK's `Client`, and the inbox items it makes.

The SDK's client router calls `AgentClient` for each request and notification the agent
sends for its session. What needs Blitz's decision or a turn, a permission request (A1),
a file write (A3) or a terminal (A4), becomes an `Ask` in the process's inbox, the agent
waiting on its future until the runner answers it; a `session/update` becomes an `Update`
(table U). The SDK runs each incoming message as a task of its own, in arrival order;
these methods put into the inbox before any `await`, which is what keeps that order.
File reads (A2) and terminal output, waits, kills and releases (A5-A8) need no decision
and no turn: they are answered here at once.

Nothing here starts, watches or stops the agent (process.py): the client knows its
process only as `Host`, the inbox it puts into and the terminals it holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from acp import RequestError

from blitz.acp.terminals import Terminal
from blitz.paths import PathRefused, Workspace

__all__ = ["AgentClient", "Ask", "Host", "Output", "Update"]

_READ_MAX = 1024 * 1024


@dataclass
class Update:
    """A `session/update`'s `update`, as JSON (table U)."""

    update: dict[str, Any]


@dataclass
class Ask:
    """An agent's request that needs Blitz's decision or the turn: `permission` (A1),
    `write` (A3) or `terminal` (A4). The agent waits for `future`."""

    kind: str
    future: asyncio.Future[Any]
    # permission: the toolCall and the options; write: path and content; terminal: params.
    params: dict[str, Any] = field(default_factory=dict)
    # Set when the turn parks on it: the ApprovalRequest's id.
    request_id: str = ""

    def cancel(self) -> None:
        """Answer it `cancelled` (the spec's MUST after a cancel), unless answered."""
        if self.future.done():
            return
        if self.kind == "permission":
            self.future.set_result({"outcome": {"outcome": "cancelled"}})
        else:
            self.future.set_exception(RequestError(-32800, "the turn ended: request cancelled"))


@dataclass
class Output:
    """New output of a terminal."""

    terminal_id: str
    text: str


class Host(Protocol):
    """What the client needs of its agent process (`process.AgentProcess`)."""

    workspace: Path
    # Requests the agent waits on Blitz for: while any is open the agent may be silent.
    owed: int
    terminals: dict[str, Terminal]

    def put(self, item: Update | Ask | Output) -> None: ...


class AgentClient:
    """The SDK's `Client`: each method hands the process what the agent asked."""

    def __init__(self, process: Host) -> None:
        self._p = process

    def on_connect(self, conn: Any) -> None:
        return None

    async def _ask(self, kind: str, params: dict[str, Any]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._p.put(Ask(kind, future, params))
        self._p.owed += 1
        try:
            return await future
        finally:
            self._p.owed -= 1

    def _terminal(self, terminal_id: str) -> Terminal:
        found = self._p.terminals.get(terminal_id)
        if found is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "details": "no such"})
        return found

    def _read(self, path: str, line: int | None, limit: int | None) -> dict[str, Any]:
        workspace = Workspace(self._p.workspace, resolved=True)
        try:
            found = workspace.read(path, _READ_MAX)
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        except (PathRefused, OSError) as exc:
            raise RequestError.invalid_params({"path": path, "details": str(exc)}) from None
        text = found.data.decode("utf-8", errors="replace")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : start + limit if limit else None])
        return {"content": text}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # No await before this put: it keeps the updates in the order they were sent.
        self._p.put(Update(update.model_dump(mode="json", by_alias=True, exclude_none=True)))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> dict[str, Any]:
        params = {
            "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            "options": [o.model_dump(mode="json", by_alias=True) for o in options],
        }
        outcome = await self._ask("permission", params)
        return dict(outcome)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return await asyncio.to_thread(self._read, path, line, limit)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> dict[str, Any]:
        await self._ask("write", {"path": path, "content": content})
        return {}

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        params = {
            "command": command,
            "args": list(args or []),
            "env": [e.model_dump(mode="json") for e in env or []],
            "cwd": cwd,
            "outputByteLimit": output_byte_limit,
        }
        terminal_id = await self._ask("terminal", params)
        return {"terminalId": terminal_id}

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return self._terminal(terminal_id).output()

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._terminal(terminal_id)
        self._p.owed += 1
        try:
            return await terminal.wait()
        finally:
            self._p.owed -= 1

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self._terminal(terminal_id).kill()
        return {}

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._p.terminals.pop(terminal_id, None)
        if terminal is not None:
            await terminal.kill()
        return {}
