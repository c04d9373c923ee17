"""Raw clients of a running server for the fuzz tests, and what every answer must be.

Requests go out as bytes, so that what the strategies draw reaches the server as drawn:
over gRPC through a channel with grpc's defaults (a stock client: it takes 4 MiB at most),
over Connect as plain HTTP posts. `Answer` is what came back, reduced to what is checked:
the status, the ErrorInfo if any, the message, the size. `check` holds every answer to the
suite's rules: never INTERNAL or UNKNOWN for what a client sent, always an ErrorInfo on a
failure, never a decoder's text or a traceback, never more than a stock client takes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import urllib.parse
from dataclasses import dataclass

import grpc
import httpx
from google.rpc import status_pb2

from blitz.size_limits import GRPC_CLIENT_MAX
from blitz.v1 import turn_pb2

__all__ = ["Answer", "check", "connect_call", "grpc_call"]

# Words of a library's own error text, or of a traceback: never in an answer.
FORBIDDEN = (
    "Traceback",
    'File "',
    "invalid literal",
    "Error parsing",
    "DecodeError",
    "Failed to parse",
    "Wire format",
    "codec",
    "decompress:",
    "Error -3",
    "Unexpected <class",
    "protocol error",
    "ASGI",
    "could not convert",
)
# How long a stream is read before the client lets go (a follow never ends on its own).
STREAM_WINDOW = 0.5
# The gRPC codes a fuzzed call may end with besides those a BlitzError carries: the
# client's own deadline and cancellation (a stream read for a window only).
_CLIENT_SIDE = {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


@dataclass
class Answer:
    """What one call came back with."""

    wire: str
    ok: bool
    code: str = ""
    info: turn_pb2.ErrorInfo | None = None
    message: str = ""
    largest: int = 0  # the largest message received, in bytes


def check(answer: Answer) -> None:
    """The suite's rules for any answer (see the module doc)."""
    assert answer.largest <= GRPC_CLIENT_MAX, answer
    if answer.ok:
        return
    assert answer.code not in ("internal", "unknown"), answer
    assert answer.info is not None and answer.info.reason, f"no ErrorInfo: {answer}"
    for text in (answer.message, answer.info.message, *answer.info.metadata.values()):
        assert not any(word in text for word in FORBIDDEN), answer


async def grpc_call(
    channel: grpc.aio.Channel, path: str, body: bytes, *, streaming: bool
) -> Answer:
    try:
        if not streaming:
            reply = await channel.unary_unary(path)(body, timeout=10)
            return Answer("grpc", True, largest=len(reply))
        largest = 0
        call = channel.unary_stream(path)(body, timeout=STREAM_WINDOW)
        async for reply in call:
            largest = max(largest, len(reply))
        return Answer("grpc", True, largest=largest)
    except grpc.aio.AioRpcError as exc:
        if streaming and exc.code() in _CLIENT_SIDE:
            return Answer("grpc", True)
        return _grpc_failure(exc)


def _grpc_failure(exc: grpc.aio.AioRpcError) -> Answer:
    info = None
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            info = turn_pb2.ErrorInfo()
            status.details[0].Unpack(info)
    code = exc.code().name.lower()
    return Answer("grpc", False, code=code, info=info, message=exc.details() or "")


async def connect_call(
    http: httpx.AsyncClient,
    path: str,
    body: bytes,
    *,
    streaming: bool,
    headers: dict[str, str] | None = None,
) -> Answer:
    """A Connect call of `body` as it is (streams: wrapped in one envelope unless `headers`
    say otherwise, by naming their own content type)."""
    sent = dict(headers or {})
    if "content-type" not in sent:
        sent["content-type"] = "application/connect+proto" if streaming else "application/proto"
        if streaming:
            body = struct.pack(">BI", 0, len(body)) + body
    stream = sent["content-type"].startswith(("application/connect+", "application/grpc-web"))
    raw = {name: value.encode() for name, value in sent.items()}  # any bytes, as sent
    if not stream:
        response = await http.post(path, content=body, headers=raw, timeout=10)
        if response.status_code == 200:
            return Answer("connect", True, largest=len(response.content))
        return _connect_failure(response.status_code, response.content)
    data = b""
    try:
        async with (
            asyncio.timeout(STREAM_WINDOW),
            http.stream("POST", path, content=body, headers=raw, timeout=10) as response,
        ):
            if response.status_code != 200:
                return _connect_failure(response.status_code, await response.aread())
            async for chunk in response.aiter_bytes():
                data += chunk
    except TimeoutError:
        pass
    if sent["content-type"].startswith("application/grpc-web"):
        return _grpc_web_end(data)
    return _connect_end(data)


def _connect_failure(status: int, content: bytes) -> Answer:
    try:
        body = json.loads(content)
    except ValueError:
        return Answer("connect", False, code=f"http {status}", message=content[:200].decode())
    return Answer(
        "connect",
        False,
        code=str(body.get("code", "")),
        info=_info(body),
        message=str(body.get("message", "")),
    )


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    frames = []
    while len(data) >= 5:
        flags, size = struct.unpack(">BI", data[:5])
        frames.append((flags, data[5 : 5 + size]))
        data = data[5 + size :]
    return frames


def _connect_end(data: bytes) -> Answer:
    largest = 0
    for flags, payload in _frames(data):
        if flags & 2:
            end = json.loads(payload or b"{}")
            if "error" in end:
                error = end["error"]
                return Answer(
                    "connect",
                    False,
                    code=str(error.get("code", "")),
                    info=_info(error),
                    message=str(error.get("message", "")),
                )
        else:
            largest = max(largest, len(payload))
    return Answer("connect", True, largest=largest)


def _grpc_web_end(data: bytes) -> Answer:
    largest = 0
    for flags, payload in _frames(data):
        if not flags & 0x80:
            largest = max(largest, len(payload))
            continue
        trailers = dict(
            line.split(":", 1) for line in payload.decode().split("\r\n") if ":" in line
        )
        status = trailers.get("grpc-status", "0").strip()
        if status == "0":
            return Answer("grpc-web", True, largest=largest)
        info = None
        if raw := trailers.get("grpc-status-details-bin", "").strip():
            parsed = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
            info = turn_pb2.ErrorInfo()
            parsed.details[0].Unpack(info)
        message = urllib.parse.unquote(trailers.get("grpc-message", "").strip())
        return Answer(
            "grpc-web", False, code=grpc_code_name(int(status)), info=info, message=message
        )
    return Answer("grpc-web", True, largest=largest)


def grpc_code_name(number: int) -> str:
    return next((c.name.lower() for c in grpc.StatusCode if c.value[0] == number), "unknown")


def _info(body: dict[str, object]) -> turn_pb2.ErrorInfo | None:
    for detail in body.get("details") or []:  # type: ignore[attr-defined]
        if detail.get("type") == "blitz.v1.ErrorInfo":
            value = detail["value"]
            return turn_pb2.ErrorInfo.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))
    return None
