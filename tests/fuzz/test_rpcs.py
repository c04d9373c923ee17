"""Generated and broken requests to every RPC, over gRPC and Connect, against a real server.

Each example is sent over both wires. Whatever comes back must follow the rules in
`fuzz/wires.py` (no INTERNAL for a client's mistake, an ErrorInfo on every failure, no
decoder text or traceback, nothing over a stock client's 4 MiB), and after each example
the server must still serve a normal call.
"""

from __future__ import annotations

import struct
from typing import Any

import grpc
import httpx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from blitz.v1 import session_pb2 as s
from blitz.v1 import workspace_pb2 as w
from fuzz.messages import message, mutated
from fuzz.profile import fuzz_settings
from fuzz.wires import check, connect_call, grpc_call

_SERVICES = (
    s.DESCRIPTOR.services_by_name["SessionService"],
    w.DESCRIPTOR.services_by_name["WorkspaceService"],
)
METHODS = [(f"/{svc.full_name}/{m.name}", m) for svc in _SERVICES for m in svc.methods]
# Requests larger than this are refused by the wire libraries themselves, by size alone.
_SENDABLE = 7 * 1024 * 1024


@pytest.fixture
async def session_id(channel: grpc.aio.Channel) -> str:
    """A real session, so that generated requests reach past "not found" too."""
    create = channel.unary_unary("/blitz.v1.SessionService/CreateSession")
    reply = await create(s.CreateSessionRequest(title="fuzz").SerializeToString())
    return s.Session.FromString(reply).id


@st.composite
def calls(draw: st.DrawFn, session_id: str) -> tuple[str, bool, bytes]:
    """A method, whether it streams, and a generated request of its type, encoded."""
    path, method = draw(st.sampled_from(METHODS))
    request: Any = draw(message(method.input_type))
    if "session_id" in method.input_type.fields_by_name and draw(st.booleans()):
        request.session_id = session_id
    body = request.SerializeToString()
    assume(len(body) < _SENDABLE)
    return path, method.server_streaming, body


async def healthy(channel: grpc.aio.Channel, http: httpx.AsyncClient) -> None:
    """A normal call succeeds, and the HTTP port is alive."""
    listing = channel.unary_unary("/blitz.v1.SessionService/ListSessions")
    await listing(s.ListSessionsRequest(page_size=1).SerializeToString(), timeout=10)
    assert (await http.get("/healthz")).status_code == 200


async def both_wires(
    channel: grpc.aio.Channel, http: httpx.AsyncClient, path: str, streaming: bool, body: bytes
) -> None:
    check(await grpc_call(channel, path, body, streaming=streaming))
    check(await connect_call(http, path, body, streaming=streaming))
    await healthy(channel, http)


@fuzz_settings
@given(data=st.data())
async def test_generated_requests_to_every_rpc(channel, http, session_id, data):
    path, streaming, body = data.draw(calls(session_id))
    await both_wires(channel, http, path, streaming, body)


@fuzz_settings
@given(data=st.data())
async def test_broken_encodings_of_requests_to_every_rpc(channel, http, session_id, data):
    path, streaming, _ = data.draw(calls(session_id))
    body = data.draw(mutated(calls(session_id).map(lambda call: call[2])))
    assume(len(body) < _SENDABLE)
    await both_wires(channel, http, path, streaming, body)


_CONTENT_TYPES = [
    "application/proto",
    "application/json",
    "application/connect+proto",
    "application/connect+json",
    "application/grpc-web+proto",
    "application/grpc-web+json",
    "application/grpc-web",
    "application/grpc",
    "application/grpc+proto",
    "text/plain",
    "application/json; charset=utf-8",
    "",
    "application/connect+💥",
]
_JSON = [
    b"{}",
    b"{",
    b"[]",
    b"null",
    b'{"sessionId": 5}',
    b'{"pageSize": "abc"}',
    b'{"afterSeq": "1e400"}',
    b'{"turn": {"timeout": "99999999999999s"}}',
    b'{"turn": {"maxCostUsd": "NaN"}}',
    b'{"labels": {"k": 7}}',
    b'{"decision": "MAYBE"}',
    b'{"unknownField": 1}',
    b"\xff\xfe",
    b'{"a":' * 200 + b"1" + b"}" * 200,
]


@st.composite
def raw_bodies(draw: st.DrawFn) -> tuple[dict[str, str], bytes]:
    """Headers and a body as no client would send them: envelopes and JSON, broken."""
    headers = {"content-type": draw(st.sampled_from(_CONTENT_TYPES))}
    for name, values in (
        ("content-encoding", ["gzip", "br", "zstd", "identity", "💥"]),
        ("connect-content-encoding", ["gzip", "br", "nope"]),
        ("grpc-encoding", ["gzip", "deflate", "nope"]),
        ("connect-timeout-ms", ["1", "abc", "-5", "99999999999", "\uff11\uff12"]),
        ("grpc-timeout", ["1S", "xS", "999999999S", "1Z"]),
        ("connect-protocol-version", ["1", "2", ""]),
    ):
        if draw(st.integers(0, 5)) == 0:
            headers[name] = draw(st.sampled_from(values))
    payload = draw(st.one_of(st.sampled_from(_JSON), st.binary(max_size=200)))
    if draw(st.booleans()):  # in an envelope, flags and declared length chosen freely
        flags = draw(st.sampled_from([0, 1, 2, 3, 0x80, 0xFF]))
        length = draw(
            st.one_of(st.just(len(payload)), st.sampled_from([0, 1, 2**24, 2**31, 2**32 - 1]))
        )
        payload = struct.pack(">BI", flags, length) + payload
        payload = payload[: draw(st.integers(0, len(payload)))] if draw(st.booleans()) else payload
    return headers, payload


@fuzz_settings
@given(call=st.sampled_from(METHODS), raw=raw_bodies())
async def test_malformed_bodies_to_the_connect_port(channel, http, call, raw):
    path, method = call
    headers, body = raw
    answer = await connect_call(
        http, path, body, streaming=method.server_streaming, headers=headers
    )
    check(answer)
    await healthy(channel, http)
