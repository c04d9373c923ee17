"""A real HTTP receiver of webhooks on 127.0.0.1, in threads of its own.

`Receiver` answers every POST as its `answer` function says (200 by default) and keeps
what it received: when, the headers, the body. `verified(secret)` checks each request's
signature with the `standardwebhooks` library, as a receiver in production would, and
returns the payloads. It runs on threads, not on the test's event loop, so a receiver
that hangs holds none of the server's work but its own connection.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook

__all__ = ["Answer", "Received", "Receiver"]


@dataclass
class Received:
    """One request as the receiver got it, and when its answer left (`answered`)."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    answered: float = 0.0

    def payload(self) -> Any:
        return json.loads(self.body)


# An answer: status, headers, body.
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Receiver:
    """`with Receiver() as rx:` serves on `rx.url` until the block ends."""

    answer: Callable[[Received], Answer] = field(default=lambda _: (200, {}, b"ok"))
    port: int = 0
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                got = Received(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                    time.time(),
                )
                with receiver._lock:
                    receiver.received.append(got)
                status, headers, body = receiver.answer(got)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the server gave up on us (its timeout)
                got.answered = time.time()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def requests(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def verified(self, *secrets: str) -> list[Any]:
        """Every request's payload, each signature checked by one of `secrets`."""
        payloads = []
        for got in self.requests():
            for secret in secrets:
                try:
                    payloads.append(Webhook(secret).verify(got.body, got.headers))
                    break
                except Exception:
                    continue
            else:
                raise AssertionError(f"no secret verifies {got.headers}")
        return payloads

    async def wait_for(
        self, done: Callable[[list[Received]], bool], within: float = 60.0
    ) -> list[Received]:
        """Wait until `done(requests)` holds (at most `within` seconds); the requests then."""
        deadline = time.monotonic() + within
        while not done(got := self.requests()):
            assert time.monotonic() < deadline, f"the receiver got {len(got)} requests"
            await asyncio.sleep(0.05)
        return got
