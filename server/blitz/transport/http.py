"""The HTTP port: a tiny ASGI router, and uvicorn serving it inside the caller's event loop.

`HttpApp` routes by path prefix to the apps mounted on it (the Connect services, each
under `/<service name>/`, the console's assets, the approval links' pages under
`/approve/` and Slack's buttons under `/slack/`), sends `/` to its `index` app (the
console's page), and answers two probes itself: `GET /healthz` (alive: 200 while
serving, 503 once a shutdown began) and `GET /readyz` (ready for calls: serving, and the
store answers within a second). No web framework, and no business rule.

`HttpServer` binds its own socket (so port 0 works and a busy port is a plain OSError,
where uvicorn would call `sys.exit`), starts uvicorn's protocol servers on it and leaves
signals to the caller: `uvicorn.Server.serve()` would install its own handlers and
re-raise the signal afterwards. `shutdown` stops accepting, lets open responses finish
within the timeout, then cancels what is left.

It must never pick the event loop (the entry point does) nor touch the process's signals.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog
import uvicorn

from blitz.transport.gate import CallGate
from blitz.transport.tls import Tls

__all__ = [
    "HttpApp",
    "HttpServer",
    "MountedApp",
    "Receive",
    "Scope",
    "Send",
    "read_body",
    "respond_text",
]

log = structlog.get_logger(__name__)

# How long the store may take to answer a readiness probe.
_READY_WITHIN_S = 1.0

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class MountedApp(Protocol):
    """An ASGI app that serves every path under its `path` (a Connect service's name)."""

    path: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...


class HttpApp:
    """The HTTP port's ASGI app: the mounted apps by path prefix, `/healthz` and `/readyz`.

    `ready` raises (or hangs) when what calls need is not there (the store); None: nothing
    but the gate to check. `notes` are lines a ready answer adds (an operator's warning).
    `index` answers `/` (None: 404).
    """

    def __init__(
        self,
        apps: list[MountedApp],
        gate: CallGate,
        *,
        ready: Callable[[], Awaitable[None]] | None = None,
        notes: tuple[str, ...] = (),
        index: MountedApp | None = None,
    ) -> None:
        self._routes = [(app.path + "/", app) for app in apps]
        self._index = index
        self._gate = gate
        self._ready = ready
        self._ready_body = "".join(f"{line}\n" for line in ("ready", *notes)).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            # lifespan is off and websockets are not served.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        path: str = scope["path"]
        app = next((app for prefix, app in self._routes if path.startswith(prefix)), None)
        head = scope["method"] == "HEAD"
        if app is not None:
            await app(scope, receive, send)
        elif path == "/" and self._index is not None:
            await self._index(scope, receive, send)
        elif path == "/healthz" and scope["method"] in {"GET", "HEAD"}:
            if self._gate.serving:
                await _respond(send, 200, b"ok\n", head=head)
            else:
                await _respond(send, 503, b"shutting down\n", head=head)
        elif path == "/readyz" and scope["method"] in {"GET", "HEAD"}:
            why = await self._not_ready()
            status, body = (503, why.encode() + b"\n") if why else (200, self._ready_body)
            await _respond(send, status, body, head=head)
        else:
            await _respond(send, 404, b"not found\n")

    async def _not_ready(self) -> str:
        """Why the server is not ready for calls; "" when it is."""
        if not self._gate.serving:
            return "shutting down"
        if self._ready is not None:
            try:
                async with asyncio.timeout(_READY_WITHIN_S):
                    await self._ready()
            except Exception:
                log.warning("not ready: the store does not answer", exc_info=True)
                return "the store does not answer"
        return ""


class HttpServer:
    """uvicorn on one listening socket, started and stopped by the caller."""

    def __init__(
        self,
        app: Any,
        *,
        host: str,
        port: int,
        shutdown_timeout: float = 10.0,
        tls: Tls | None = None,
        reuse_port: bool = False,
    ) -> None:
        """`reuse_port`: the port is shared with the other workers of `--workers`."""
        self._host = host
        self._requested_port = port
        self._reuse_port = reuse_port
        self._config = uvicorn.Config(
            app,
            host=host,
            port=port,
            loop="none",
            http="httptools",
            lifespan="off",
            interface="asgi3",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=False,
            # uvicorn takes whole seconds; never 0, which would cancel at once.
            timeout_graceful_shutdown=max(1, round(shutdown_timeout)),
            ssl_certfile=tls.cert_file if tls else None,
            ssl_keyfile=tls.key_file if tls else None,
        )
        self._server = uvicorn.Server(self._config)
        self._socket: socket.socket | None = None
        self.port = 0

    async def start(self) -> None:
        """Listen and serve; raises OSError when the address cannot be bound."""
        self._socket = _listen(self._host, self._requested_port, reuse_port=self._reuse_port)
        self.port = self._socket.getsockname()[1]
        self._config.load()
        self._server.lifespan = self._config.lifespan_class(self._config)
        try:
            await self._server.startup(sockets=[self._socket])
        except BaseException:
            self._socket.close()
            raise

    async def shutdown(self, *, force: bool = False) -> None:
        """Stop accepting; wait for open responses (up to the timeout), then cancel them.

        With `force`, close connections without waiting. A no-op once shut down.
        """
        if self._socket is None:
            return
        self._server.should_exit = True
        self._server.force_exit = force
        await self._server.shutdown(sockets=[self._socket])
        self._socket = None


def _listen(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise OSError(f"cannot listen for HTTP on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen for HTTP on {host}:{port}: {exc}") from None
    return sock


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """A request's whole body; None when it is longer than `limit` bytes (the rest is
    left unread) or the client went away."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return body


async def respond_text(
    send: Send, status: int, text: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """A plain-text answer (for what is no page and no RPC: a probe, Slack)."""
    body = text.encode() + (b"\n" if text else b"")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _respond(send: Send, status: int, body: bytes, *, head: bool = False) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if head else body})
