"""What connectrpc refuses on its own, answered like every other bad input.

connectrpc checks a request's framing before any handler sees it (its envelope, its
compression, its size, its content type) and reports a failure its own way: the library's
text (`decompress: Error -3 while decompressing data…`), no ErrorInfo, INTERNAL for a
message flagged compressed with no encoding named, an empty body for a 415. Here each such
refusal becomes a `BlitzError` like the rest: INVALID_ARGUMENT naming `request` (or the
header at fault), or REQUEST_TOO_LARGE for a body past what the port reads, in our words;
the library's text goes to the log.

Two places catch them. `ProtocolErrors`, a metadata interceptor first in line, sees every
failure once a request's protocol and codec are known, and replaces one that is not ours.
`Guarded`, around the ASGI app, refuses what connectrpc would refuse earlier than that (an
HTTP method other than POST, a gRPC content type on this HTTP/1.1 port, a malformed timeout
header) and gives a body to the bare 4xx answers connectrpc sends without one.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

import structlog
from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.request import RequestContext
from google.protobuf import any_pb2, json_format
from google.rpc import status_pb2
from protobuf import message_from_json_value
from protobuf.wkt import Any as AnyDetail
from protobuf.wkt import Struct

from blitz.errors import BlitzError, internal_error, invalid_argument
from blitz.transport.error_size import fit_error
from blitz.transport.gate import request_too_large
from blitz.transport.http import MountedApp, Receive, Scope, Send
from blitz.v1 import turn_pb2

__all__ = [
    "ERROR_INFO",
    "Guarded",
    "InfoDetail",
    "ProtocolErrors",
    "is_ours",
    "send_grpc_web",
    "send_json",
]

log = structlog.get_logger(__name__)

ERROR_INFO = turn_pb2.ErrorInfo.DESCRIPTOR.full_name
# Content types this port serves: Connect (unary and streaming) and gRPC-Web.
ACCEPTED = (
    "application/proto, application/json, application/connect+proto, "
    "application/connect+json, application/grpc-web+proto, application/grpc-web+json, "
    "application/grpc-web-text+proto"
)
_CONNECT_TIMEOUT = re.compile(r"^[0-9]{1,10}$")
_GRPC_TIMEOUT = re.compile(r"^[0-9]{1,8}[HMSmun]$")
# The codes a refusal keeps as they are: the client went away or ran out of time.
_KEPT = frozenset({Code.CANCELED, Code.DEADLINE_EXCEEDED})

# connectrpc's refusals, by the start of its message, in our words.
_WHY = (
    ("protocol error: sent compressed", "its message is flagged compressed but names no encoding"),
    ("protocol error: invalid envelope flags", "an envelope has flags this server does not know"),
    ("protocol error: promised", "the body ends inside an envelope"),
    ("protocol error: incomplete envelope", "the body ends inside an envelope"),
    ("decompress:", "its body does not decompress with the encoding it names"),
    ("unknown compression", "its encoding is not one this server reads (gzip, or none)"),
    ("unary request has", "a unary call takes exactly one message"),
)


class InfoDetail(ErrorDetail):
    """A `BlitzError`'s ErrorInfo as a Connect error detail: the message in `value`, as
    every detail, and also as JSON in `debug`, which Connect's protocol allows so that a
    client without our descriptors (curl, a browser's network tab) can read it.

    connectrpc writes `debug` from `value()`, which it can render only for messages of
    its own protobuf runtime, and our stubs are of the other one; so `value()` answers
    the ErrorInfo as a Struct of its JSON form (connectrpc calls it only to write JSON).
    """

    def __init__(self, info: turn_pb2.ErrorInfo) -> None:
        super().__init__(
            AnyDetail(type_url="type.googleapis.com/" + ERROR_INFO, value=info.SerializeToString())
        )
        self.debug: dict[str, Any] = json_format.MessageToDict(info)
        self._as_json = message_from_json_value(Struct, self.debug)

    def value(self, *args: Any) -> Any:
        return super().value(*args) if args else self._as_json

    def to_json(self) -> dict[str, Any]:
        """The detail as Connect's JSON error body carries it."""
        value = base64.b64encode(self.message_bytes).decode().rstrip("=")
        return {"type": ERROR_INFO, "value": value, "debug": self.debug}


def is_ours(error: ConnectError) -> bool:
    """Whether `error` was made from a `BlitzError` (it carries an ErrorInfo)."""
    return any(detail.type_name == ERROR_INFO for detail in error.details)


def explained(exc: Exception) -> BlitzError:
    """The `BlitzError` a refusal of connectrpc's stands for; its text goes to the log."""
    if isinstance(exc, ConnectError):
        text = exc.message
        log.info("request_refused", code=exc.code.value, error=text)
        if exc.code == Code.RESOURCE_EXHAUSTED:
            return request_too_large()
        why = next((ours for start, ours in _WHY if text.startswith(start)), "")
        return invalid_argument(
            "request", f"the request is not valid: {why or 'it breaks the protocol'}"
        )
    if isinstance(exc, ValueError):  # a header or a query string that does not decode
        log.info("request_refused", error=str(exc))
        return invalid_argument("request", "the request is not valid: it does not decode")
    log.error("unexpected error in a request's framing", exc_info=exc)
    return internal_error()


class ProtocolErrors:
    """A leading metadata interceptor: a failure that is not a `BlitzError` is made one.

    `to_wire` is how the Connect transport sends a `BlitzError`.
    """

    def __init__(self, to_wire: Callable[[BlitzError], ConnectError]) -> None:
        self._to_wire = to_wire

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(
        self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /
    ) -> None:
        if error is None or isinstance(error, BlitzError):
            return
        if isinstance(error, ConnectError) and (is_ours(error) or error.code in _KEPT):
            return
        raise self._to_wire(explained(error)) from None


class Guarded:
    """A Connect app behind the checks connectrpc makes before a request has a protocol.

    Whatever it refuses is answered with a body: JSON for Connect, trailers for gRPC-Web.
    """

    def __init__(self, app: MountedApp, codes: dict[Any, Code]) -> None:
        self._app = app
        self._codes = codes
        self.path: str = app.path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        content_type = headers.get("content-type", "").strip().lower()
        grpc_web = content_type.startswith("application/grpc-web")
        refusal = _refusal(scope["method"], content_type, headers, grpc_web)
        if refusal is not None:
            status, error = refusal
            if grpc_web and status == 400:
                await send_grpc_web(send, content_type, error, self._codes)
            else:
                await send_json(send, status, error, self._codes)
            return
        await self._app(scope, receive, _Bodied(send, content_type, self._codes))


def _refusal(
    method: str, content_type: str, headers: dict[str, str], grpc_web: bool
) -> tuple[int, BlitzError] | None:
    if method != "POST":
        return 405, invalid_argument("method", "calls are POST requests", allowed="POST")
    if content_type.startswith("application/grpc") and not grpc_web:
        return 415, _unsupported(content_type)
    if grpc_web:
        timeout = headers.get("grpc-timeout")
        if timeout is not None and not _GRPC_TIMEOUT.match(timeout):
            return 400, invalid_argument("grpc-timeout", "grpc-timeout is not a valid timeout")
        return None
    timeout = headers.get("connect-timeout-ms")
    if timeout is not None and not _CONNECT_TIMEOUT.match(timeout):
        return 400, invalid_argument(
            "connect-timeout-ms", "connect-timeout-ms must be 1 to 10 digits"
        )
    version = headers.get("connect-protocol-version")
    if version is not None and version != "1":
        return 400, invalid_argument(
            "connect-protocol-version", "connect-protocol-version must be 1"
        )
    return None


def _unsupported(content_type: str) -> BlitzError:
    shown = content_type[:100] or "none"
    return invalid_argument(
        "content-type",
        f"the content type {shown!r} is not served on this port",
        accepted=ACCEPTED,
    )


class _Bodied:
    """connectrpc's `send`, where a bare 405 or 415 gains a JSON error body."""

    def __init__(self, send: Send, content_type: str, codes: dict[Any, Code]) -> None:
        self._send = send
        self._content_type = content_type
        self._codes = codes
        self._held: dict[str, Any] | None = None

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] in (405, 415):
            self._held = message
            return
        held, self._held = self._held, None
        if held is not None:
            if message["type"] == "http.response.body" and not message.get("body"):
                error = (
                    _unsupported(self._content_type)
                    if held["status"] == 415
                    else invalid_argument("method", "calls are POST requests", allowed="POST")
                )
                await send_json(self._send, held["status"], error, self._codes)
                return
            await self._send(held)
        await self._send(message)


async def send_json(send: Send, status: int, error: BlitzError, codes: dict[Any, Code]) -> None:
    """The error as Connect's JSON error body (and its ErrorInfo as a detail)."""
    error = fit_error(error)
    body = json.dumps(
        {
            "code": codes[error.status].value,
            "message": error.message,
            "details": [InfoDetail(error.to_proto()).to_json()],
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 405:
        headers.append((b"allow", b"POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_grpc_web(
    send: Send,
    content_type: str,
    error: BlitzError,
    codes: dict[Any, Code],
    *,
    http_status: int = 200,
) -> None:
    """The error as a gRPC-Web trailers-only answer, its ErrorInfo in grpc-status-details-bin.

    `http_status` other than 200: a refusal of the request itself, before any call; a
    client that reads only the HTTP status maps 400 and 403 as gRPC does.
    """
    error = fit_error(error)
    code = _GRPC_CODES[codes[error.status]]
    detail = any_pb2.Any()
    detail.Pack(error.to_proto())
    status = status_pb2.Status(code=code, message=error.message, details=[detail])
    headers = [
        (b"content-type", content_type.encode("latin-1")),
        (b"grpc-status", str(code).encode()),
        (b"grpc-message", urllib.parse.quote(error.message, safe="").encode()),
        (b"grpc-status-details-bin", base64.b64encode(status.SerializeToString()).rstrip(b"=")),
    ]
    await send({"type": "http.response.start", "status": http_status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


# gRPC's numbers for Connect's codes (the ones a BlitzError can carry).
_GRPC_CODES = {
    Code.INVALID_ARGUMENT: 3,
    Code.NOT_FOUND: 5,
    Code.ALREADY_EXISTS: 6,
    Code.FAILED_PRECONDITION: 9,
    Code.PERMISSION_DENIED: 7,
    Code.UNAUTHENTICATED: 16,
    Code.RESOURCE_EXHAUSTED: 8,
    Code.CANCELED: 1,
    Code.DEADLINE_EXCEEDED: 4,
    Code.UNAVAILABLE: 14,
    Code.INTERNAL: 13,
}
