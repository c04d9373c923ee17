"""The agent's stdio as JSON-RPC messages, bounded: Blitz's own transport for the ACP SDK.

The SDK (`acp.connect_to_agent(client, transport)`) takes any object with `send`,
`receive` and `close`. Its own newline reader has no bound on a line, logs and skips a
line that is not JSON, and fails a whole notification on an update kind its schema lacks.
This one reads the agent's stdout with a bound and a judgement (docs/agents.md, table F):

- a line past `MAX_LINE` bytes (F6), a line that is not a JSON object of JSON-RPC 2.0
  (F5), or a call of a method ACP 1 does not give the agent (A12) is a fault: it is
  recorded, and `receive` ends the stream, which fails every open request of the
  connection with `ConnectionError` (the process then says which fault it was);
- a `session/update` of a kind this schema lacks (U14), or one of the unstable plan
  updates Blitz never asked for (U8), is dropped with a debug line: not a fault;
- each line read is a sign of life (`last_heard`), for the silence deadline (F4).

Its stderr is no protocol, but a pipe all the same: `StderrRing` drains it all the time
(an undrained pipe blocks the agent) and keeps its last lines for the faults that quote it.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from typing import Any

import structlog

from blitz.errors import BlitzError, Reason
from blitz.redact import mask_known

__all__ = ["MAX_LINE", "BoundedTransport", "StderrRing", "protocol_fault"]

log = structlog.get_logger(__name__)

# The longest line an agent may write (8 MiB): a file's content travels in one.
MAX_LINE = 8 * 1024 * 1024

# What an agent may call on Blitz (ACP 1's client methods Blitz offers).
_CLIENT_METHODS = frozenset(
    {
        "session/request_permission",
        "session/update",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/release",
        "terminal/wait_for_exit",
        "terminal/kill",
    }
)
# The session/update kinds the schema has and Blitz maps (table U); others are dropped.
_UPDATES = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
)


def protocol_fault(message: str, **metadata: str) -> BlitzError:
    return BlitzError(Reason.AGENT_PROTOCOL_ERROR, message, metadata)


class BoundedTransport:
    """The SDK's `Transport` over a child's stdin and stdout."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = asyncio.Lock()
        # What ended the stream, if the agent broke the protocol.
        self.fault: BlitzError | None = None
        self.last_heard = time.monotonic()
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            if self._writer.is_closing():
                raise ConnectionError("the agent's stdin is closed")
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while self.fault is None:
            line = await self._line()
            if line is None:
                return None
            self.last_heard = time.monotonic()
            if not line.strip():
                continue
            message = self._judge(line)
            if message is not None:
                return message
        return None

    async def close(self) -> None:
        self.closed = True
        if not self._writer.is_closing():
            self._writer.close()

    async def _line(self) -> bytes | None:
        """The next whole line, or None at the end of the stream (or past the bound)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                part = await self._reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                part = await self._reader.readexactly(exc.consumed)
                chunks.append(part)
                size += len(part)
                if size > MAX_LINE:
                    self.fault = protocol_fault(
                        f"the agent wrote a line of more than {MAX_LINE} bytes",
                        limit=str(MAX_LINE),
                    )
                    return None
                continue
            except asyncio.IncompleteReadError as exc:
                # The end of its stdout: a last line without its newline still counts.
                if not exc.partial and not chunks:
                    return None
                part = exc.partial
            except (ConnectionError, OSError):
                return None
            chunks.append(part)
            size += len(part)
            if size > MAX_LINE:
                self.fault = protocol_fault(
                    f"the agent wrote a line of more than {MAX_LINE} bytes",
                    limit=str(MAX_LINE),
                )
                return None
            return b"".join(chunks)

    def _judge(self, line: bytes) -> dict[str, Any] | None:
        """The message, None to skip it; a fault ends the stream (self.fault set)."""
        try:
            message = json.loads(line)
        except ValueError:
            self.fault = protocol_fault(
                "the agent wrote a line that is not JSON: " + _shown(line), line=_shown(line)
            )
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.fault = protocol_fault("the agent wrote JSON that is not JSON-RPC 2.0")
            return None
        method = message.get("method")
        if method is None:
            return message  # an answer to one of Blitz's requests
        if not isinstance(method, str):
            self.fault = protocol_fault("the agent sent a method that is not a string")
            return None
        if method.startswith("_"):
            return message  # an extension: the SDK answers -32601 or drops it (A11)
        if method not in _CLIENT_METHODS:
            self.fault = protocol_fault(
                f"the agent called {method!r}, which ACP 1 does not give an agent",
                method=method[:100],
            )
            return None
        if method == "session/update":
            params = message.get("params")
            update = params.get("update") if isinstance(params, dict) else None
            kind = update.get("sessionUpdate") if isinstance(update, dict) else None
            if kind not in _UPDATES:
                log.debug("acp_update_dropped", kind=str(kind)[:64])
                return None
        return message


def _shown(line: bytes) -> str:
    return line[:200].decode("utf-8", errors="replace").strip()


class StderrRing:
    """The last `keep` characters of a child's stderr, in lines."""

    def __init__(self, keep: int = 64 * 1024) -> None:
        self._lines: collections.deque[str] = collections.deque()
        self._size = 0
        self._keep = keep

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line past the reader's limit: keep its start
                line = await stream.read(4096)
            if not line:
                return
            text = line.decode("utf-8", errors="replace").rstrip("\n")
            self._lines.append(text)
            self._size += len(text)
            while self._size > self._keep and self._lines:
                self._size -= len(self._lines.popleft())

    def tail(self, lines: int = 20) -> list[str]:
        """Its last lines, each cut to 500 characters, known secrets masked."""
        return [mask_known(line[:500]) for line in list(self._lines)[-lines:]]
