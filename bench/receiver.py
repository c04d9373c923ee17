"""A webhook receiver for the benchmark: a minimal HTTP/1.1 server on the harness's loop.

It answers every POST `200 ok` at once, on keep-alive connections, and keeps, for each
request, the wall-clock time its answer was written and the body's JSON. It checks no
signature (the tests do): what it measures is the server's delivery, not the receiver.
Wall-clock time, because it is compared with the time the server stamped on the event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Delivered", "Receiver", "receiver"]

_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


@dataclass(frozen=True)
class Delivered:
    answered: float
    """`time.time()` when the 200 was written."""
    payload: dict[str, Any]


@dataclass
class Receiver:
    port: int = 0
    delivered: list[Delivered] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                writer.write(_ANSWER)
                answered = time.time()
                self.delivered.append(Delivered(answered, json.loads(body)))
                self.arrived.set()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def receiver() -> AsyncIterator[Receiver]:
    """A receiver on a free port of 127.0.0.1, until the block ends."""
    made = Receiver()
    server = await asyncio.start_server(made.serve, "127.0.0.1", 0)
    made.port = server.sockets[0].getsockname()[1]
    try:
        yield made
    finally:
        server.close()
        await server.wait_closed()
