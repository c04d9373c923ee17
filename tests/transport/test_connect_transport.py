"""The HTTP port: Connect and gRPC-Web calls reach the core; errors carry ErrorInfo."""

from __future__ import annotations

import base64
import json
import struct
import time

import httpx
import pytest
import structlog
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from support.fake_core import SECRET, FakeCore

from blitz.config import Settings
from blitz.errors import Status
from blitz.server import RunningServer, running_server
from blitz.transport.connect import CONNECT_CODES
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_connect import SessionServiceClient


def error_info(error: ConnectError) -> t.ErrorInfo:
    """The ErrorInfo detail of a ConnectError, as a client reads it."""
    [detail] = error.details
    assert detail.type_name == "blitz.v1.ErrorInfo"
    return t.ErrorInfo.FromString(detail.message_bytes)


def test_every_status_has_a_connect_code() -> None:
    assert set(CONNECT_CODES) == set(Status)


async def test_a_call_reaches_the_core_with_deadline_headers_and_peer(
    connect_client: SessionServiceClient, core: FakeCore
) -> None:
    session = await connect_client.create_session(
        s.CreateSessionRequest(title="hello"), headers={"x-client": "tests"}, timeout_ms=30_000
    )

    assert session.title == "hello"
    [ctx] = core.contexts
    assert ctx.deadline is not None
    assert 25 < ctx.deadline - time.monotonic() <= 31  # the server counts from arrival
    assert ctx.metadata["x-client"] == "tests"
    assert ctx.peer.startswith("127.0.0.1:")


async def test_blitz_error_arrives_as_its_code_with_error_info(
    connect_client: SessionServiceClient,
) -> None:
    with pytest.raises(ConnectError) as caught:
        await connect_client.get_session(s.GetSessionRequest(session_id="nope"))

    assert caught.value.code == Code.NOT_FOUND
    assert caught.value.message == "no session 'nope'"
    info = error_info(caught.value)
    assert info.reason == "SESSION_NOT_FOUND"
    assert dict(info.metadata) == {"session_id": "nope"}


async def test_unexpected_exception_is_internal_and_hides_its_text(
    connect_client: SessionServiceClient,
) -> None:
    with structlog.testing.capture_logs() as logs, pytest.raises(ConnectError) as caught:
        await connect_client.create_session(s.CreateSessionRequest(title="boom"))

    assert caught.value.code == Code.INTERNAL
    assert SECRET not in caught.value.message
    assert error_info(caught.value).reason == "INTERNAL"
    [entry] = [e for e in logs if e["event"] == "unexpected error in call"]
    assert entry["exc_info"] is True
    assert entry["transport"] == "connect"


@pytest.mark.parametrize("protocol", [ProtocolType.CONNECT, ProtocolType.GRPC_WEB])
async def test_stream_delivers_events_then_fails_midway_with_error_info(
    server: RunningServer, core: FakeCore, protocol: ProtocolType
) -> None:
    received = []
    async with SessionServiceClient(server.http_url, protocol=protocol) as client:
        with pytest.raises(ConnectError) as caught:
            async for event in client.run_turn(
                s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="fail"))
            ):
                received.append(event.seq)

    assert received == [1, 2]
    assert caught.value.code == Code.UNAVAILABLE
    assert error_info(caught.value).reason == "MODEL_ERROR"
    assert core.closed_streams == 1


@pytest.mark.parametrize("protocol", [ProtocolType.CONNECT, ProtocolType.GRPC_WEB])
async def test_stream_crash_is_internal_and_hides_its_text(
    server: RunningServer, protocol: ProtocolType
) -> None:
    async with SessionServiceClient(server.http_url, protocol=protocol) as client:
        with pytest.raises(ConnectError) as caught:
            async for _ in client.run_turn(
                s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="crash"))
            ):
                pass

    assert caught.value.code == Code.INTERNAL
    assert SECRET not in caught.value.message
    assert error_info(caught.value).reason == "INTERNAL"


async def test_grpc_web_unary_call_and_error(server: RunningServer) -> None:
    async with SessionServiceClient(server.http_url, protocol=ProtocolType.GRPC_WEB) as client:
        session = await client.create_session(s.CreateSessionRequest(title="web"))
        with pytest.raises(ConnectError) as caught:
            await client.get_session(s.GetSessionRequest(session_id="nope"))

    assert session.title == "web"
    assert caught.value.code == Code.NOT_FOUND
    assert error_info(caught.value).reason == "SESSION_NOT_FOUND"


async def test_healthz_says_ok_while_serving(server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        reply = await http.get("/healthz")
        missing = await http.get("/nothing-here")

    assert (reply.status_code, reply.text) == (200, "ok\n")
    assert missing.status_code == 404


def connect_stream_request(message: bytes) -> bytes:
    """One uncompressed Connect/gRPC-Web envelope."""
    return struct.pack(">BI", 0, len(message)) + message


async def run_turn_raw(
    server: RunningServer, content_type: str, accept_header: str
) -> httpx.Response:
    body = connect_stream_request(
        s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="hi")).SerializeToString()
    )
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        return await http.post(
            "/blitz.v1.SessionService/RunTurn",
            content=body,
            headers={"content-type": content_type, accept_header: "gzip"},
        )


@pytest.mark.parametrize(
    ("content_type", "accept_header", "encoding_header"),
    [
        ("application/connect+proto", "connect-accept-encoding", "connect-content-encoding"),
        ("application/grpc-web+proto", "grpc-accept-encoding", "grpc-encoding"),
    ],
)
async def test_streamed_messages_are_not_gzipped_by_default(
    server: RunningServer, content_type: str, accept_header: str, encoding_header: str
) -> None:
    reply = await run_turn_raw(server, content_type, accept_header)

    assert reply.status_code == 200
    assert reply.headers[encoding_header] == "identity"
    assert reply.content[0] == 0, "first envelope flagged as compressed"


async def test_streamed_messages_are_gzipped_when_configured(
    settings: Settings, core: FakeCore
) -> None:
    from dataclasses import replace

    async with running_server(replace(settings, compress_streams=True), ports=core.ports) as server:
        reply = await run_turn_raw(server, "application/connect+proto", "connect-accept-encoding")

    assert reply.headers["connect-content-encoding"] == "gzip"
    assert reply.content[0] & 1 == 1


async def test_gzip_requests_and_unary_responses_still_work(server: RunningServer) -> None:
    """The default client gzips its requests and accepts gzip: unary answers stay gzipped."""
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        reply = await http.post(
            "/blitz.v1.SessionService/CreateSession",
            content=s.CreateSessionRequest(title="zip").SerializeToString(),
            headers={"content-type": "application/proto", "accept-encoding": "gzip"},
        )

    assert reply.headers["content-encoding"] == "gzip"
    assert s.Session.FromString(reply.content).title == "zip"  # httpx un-gzips


def _json_error_info(body: dict[str, object]) -> t.ErrorInfo:
    [detail] = body["details"]  # type: ignore[misc]
    assert detail["type"] == "blitz.v1.ErrorInfo"
    value = detail["value"]
    return t.ErrorInfo.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))


@pytest.mark.parametrize(
    ("content_type", "body", "field"),
    [
        ("application/json", b'{"approvalTimeout": "soon"}', "approval_timeout"),
        ("application/json", b'{"labels": {"team": 5}}', "labels"),
        ("application/json", b"{", "request"),
        ("application/proto", b"\xff\xff\xff", "request"),
    ],
)
async def test_a_request_that_does_not_decode_is_invalid_argument_naming_the_field(
    server: RunningServer, core: FakeCore, content_type: str, body: bytes, field: str
) -> None:
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        reply = await http.post(
            "/blitz.v1.SessionService/CreateSession",
            content=body,
            headers={"content-type": content_type},
        )
    assert reply.status_code == 400
    error = reply.json()
    assert error["code"] == "invalid_argument"
    info = _json_error_info(error)
    assert (info.reason, info.metadata["field"]) == ("INVALID_ARGUMENT", field)
    assert "blitz.v1.CreateSessionRequest" in info.message
    assert "parse" not in info.message.lower(), "the decoder's own words stay in the log"
    assert core.contexts == []  # it never reached the core


async def test_a_stream_request_that_does_not_decode_ends_with_error_info(
    server: RunningServer,
) -> None:
    body = b'{"sessionId": "s_1", "turn": {"text": "hi", "timeout": "forever"}}'
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        reply = await http.post(
            "/blitz.v1.SessionService/RunTurn",
            content=struct.pack(">BI", 0, len(body)) + body,
            headers={"content-type": "application/connect+json"},
        )
    flags, size = struct.unpack(">BI", reply.content[:5])
    assert flags & 0x02, "the only message is the end of the stream"
    error = json.loads(reply.content[5 : 5 + size])["error"]
    assert error["code"] == "invalid_argument"
    assert _json_error_info(error).metadata["field"] == "turn.timeout"
