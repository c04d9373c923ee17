"""gRPC-Web's text mode (`application/grpc-web-text`), in front of a Connect app.

gRPC-Web has two encodings of the same framed messages: binary (`application/grpc-web`,
`+proto`), which connectrpc serves, and text, the same bytes in base64, which some browser
clients use and connectrpc does not serve. This is the translation between them, and
nothing else: a text request's body is decoded whole (it is one message: every call of
this port is unary or server-streaming) and handed to the app as a binary gRPC-Web request;
each piece of the binary answer goes back base64-encoded, as it is sent, so a stream stays
live. Each piece is padded on its own, as the gRPC-Web protocol allows: a reader decodes
the body as concatenated padded segments (so does the request decoder here).

A body that is not base64 is INVALID_ARGUMENT (`field: request`), and one larger than the
port reads is REQUEST_TOO_LARGE, each a gRPC-Web trailers-only answer like the other
refusals (`connect_errors`). Anything else, the answer's status and errors included, is
the app's.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from connectrpc.code import Code

from blitz.errors import invalid_argument
from blitz.transport.connect_errors import send_grpc_web
from blitz.transport.gate import MAX_REQUEST_BYTES, request_too_large
from blitz.transport.http import MountedApp, Receive, Scope, Send

__all__ = ["GrpcWebText"]

_TEXT = "application/grpc-web-text"
_BINARY = "application/grpc-web"
# The most base64 a request of MAX_REQUEST_BYTES takes, with room for padded segments.
_MAX_TEXT_BYTES = (MAX_REQUEST_BYTES + 2) // 3 * 4 + 4096
# Each run of padding ends a segment (a chunk its sender padded on its own).
_PADDING = re.compile(rb"=+")


class GrpcWebText:
    """`app` (a Connect app), also answering gRPC-Web's text mode."""

    def __init__(self, app: MountedApp, codes: dict[Any, Code]) -> None:
        self._app = app
        self._codes = codes
        self.path: str = app.path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        content_type = _header(scope, b"content-type")
        if not content_type.lower().startswith(_TEXT) or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        text_type = content_type
        binary_type = _BINARY + content_type[len(_TEXT) :]
        text = await _read_body(receive)
        if text is None:
            await send_grpc_web(send, text_type, request_too_large(), self._codes)
            return
        try:
            body = _decode(text)
        except binascii.Error:
            error = invalid_argument("request", "the request is not valid: its body is not base64")
            await send_grpc_web(send, text_type, error, self._codes)
            return
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name.lower() not in (b"content-type", b"content-length")
        ]
        headers += [
            (b"content-type", binary_type.encode("latin-1")),
            (b"content-length", str(len(body)).encode()),
        ]
        delivered = False

        async def decoded() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app({**scope, "headers": headers}, decoded, _TextAnswer(send))


class _TextAnswer:
    """The app's `send`, turning a binary gRPC-Web answer into text mode as it goes."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._encode = False

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = []
            for name, value in message.get("headers", []):
                lowered = name.lower()
                if lowered == b"content-type" and value.lower().startswith(_BINARY.encode()):
                    self._encode = True
                    value = _TEXT.encode() + value[len(_BINARY) :]
                elif lowered == b"content-length":
                    continue  # base64 is longer: the answer is chunked
                headers.append((name, value))
            if not self._encode:  # not gRPC-Web (a 405, say): as the app sent it
                headers = message.get("headers", [])
            message = {**message, "headers": headers}
        elif message["type"] == "http.response.body" and self._encode:
            message = {**message, "body": base64.b64encode(message.get("body", b""))}
        await self._send(message)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body; None once it passes what a request may be in base64."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)  # the client went away; the app sees an empty body
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_TEXT_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _decode(text: bytes) -> bytes:
    """Concatenated base64 segments, each padded on its own, decoded; binascii.Error if not."""
    out: list[bytes] = []
    start = 0
    for padding in _PADDING.finditer(text):
        out.append(_segment(text[start : padding.end()]))
        start = padding.end()
    if start < len(text):
        out.append(_segment(text[start:]))
    return b"".join(out)


def _segment(segment: bytes) -> bytes:
    if len(segment) % 4:
        if b"=" in segment:
            raise binascii.Error("misplaced padding")
        segment += b"=" * (-len(segment) % 4)  # an unpadded last segment
    return binascii.a2b_base64(segment, strict_mode=True)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1")).strip()
    return ""
