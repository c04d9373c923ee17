"""What the libraries refuse before a handler runs is answered like every other bad input.

A client's broken framing (an envelope flagged compressed with no encoding, a body that
does not decompress, a content type no codec reads, a malformed timeout header) is
INVALID_ARGUMENT with an ErrorInfo and our words, never INTERNAL, never the library's text.
"""

from __future__ import annotations

import base64
import json
import struct

import grpc
import pytest
from google.rpc import status_pb2

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2

WATCH = "/blitz.v1.SessionService/Watch"
LIST = "/blitz.v1.SessionService/ListSessions"
LIBRARY_WORDS = (
    "decompress:",
    "Error -3",
    "protocol error",
    "Invalid timeout",
    "ASGI",
    "Traceback",
)


def info_of_json(body: dict[str, object]) -> turn_pb2.ErrorInfo:
    [detail] = body["details"]  # type: ignore[misc]
    assert detail["type"] == "blitz.v1.ErrorInfo"
    value = detail["value"]
    return turn_pb2.ErrorInfo.FromString(base64.b64decode(value + "=" * (-len(value) % 4)))


def end_of_connect_stream(body: bytes) -> dict[str, object]:
    """The JSON of a Connect stream's end message (flag 2), its only message here."""
    flags, size = struct.unpack(">BI", body[:5])
    assert flags == 2
    return json.loads(body[5 : 5 + size])["error"]  # type: ignore[no-any-return]


def assert_ours(message: str) -> None:
    assert not any(words in message for words in LIBRARY_WORDS), message


async def test_a_compressed_flag_without_an_encoding_is_a_client_error(http):
    """connectrpc called it INTERNAL: the client's mistake looked like the server's fault."""
    envelope = struct.pack(">BI", 1, 2) + b"{}"
    answer = await http.post(
        WATCH, content=envelope, headers={"content-type": "application/connect+json"}
    )
    error = end_of_connect_stream(answer.content)
    assert error["code"] == "invalid_argument"
    info = info_of_json(error)
    assert (info.reason, dict(info.metadata)) == ("INVALID_ARGUMENT", {"field": "request"})
    assert "flagged compressed but names no encoding" in info.message
    assert_ours(str(error["message"]))


async def test_grpc_web_gets_the_same_answer_in_its_trailers(http):
    envelope = struct.pack(">BI", 1, 2) + b"{}"
    answer = await http.post(
        WATCH, content=envelope, headers={"content-type": "application/grpc-web+json"}
    )
    trailers = dict(
        line.split(": ", 1) for line in answer.content[5:].decode().strip().split("\r\n")
    )
    assert trailers["grpc-status"] == "3"
    raw = trailers["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    info = turn_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert info.reason == "INVALID_ARGUMENT"


async def test_a_body_that_does_not_decompress_is_refused_in_our_words(http):
    answer = await http.post(
        LIST,
        content=b"not gzip at all",
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert answer.status_code == 400
    body = answer.json()
    assert info_of_json(body).metadata["field"] == "request"
    assert "does not decompress" in body["message"]
    assert_ours(body["message"])


async def test_a_wrong_content_type_is_answered_with_a_body(http):
    answer = await http.post(LIST, content=b"{}", headers={"content-type": "text/plain"})
    assert answer.status_code == 415
    body = answer.json()
    info = info_of_json(body)
    assert info.metadata["field"] == "content-type"
    assert "application/connect+json" in info.metadata["accepted"]


async def test_grpc_over_http1_is_refused_without_a_traceback(http, capfd):
    """connectrpc raised a RuntimeError naming ASGI trailers, and uvicorn logged it."""
    answer = await http.post(LIST, content=b"", headers={"content-type": "application/grpc"})
    assert answer.status_code == 415
    assert_ours(answer.json()["message"])
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ({"content-type": "application/json", "connect-timeout-ms": "abc"}, "connect-timeout-ms"),
        (
            {"content-type": "application/json", "connect-protocol-version": "2"},
            "connect-protocol-version",
        ),
    ],
)
async def test_a_malformed_connect_header_is_named_not_echoed(http, headers, field):
    answer = await http.post(LIST, content=b"{}", headers=headers)
    assert answer.status_code == 400
    body = answer.json()
    assert info_of_json(body).metadata["field"] == field
    assert "abc" not in body["message"]


async def test_another_method_than_post_is_answered_with_a_body(http):
    answer = await http.get(LIST + "?encoding=json&message=%7B%7D")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"
    assert info_of_json(answer.json()).metadata["field"] == "method"


async def test_an_undecodable_health_check_is_invalid_argument_in_our_words(server):
    async with grpc.aio.insecure_channel(server.grpc_target) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await check(b"\xff\xff\xff")
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details() == (
        "the request is not a valid grpc.health.v1.HealthCheckRequest: it does not decode"
    )


async def test_an_error_that_echoes_a_huge_value_still_reaches_a_grpc_client(grpc_stub):
    """The fake core echoes the session id; 100 KB of it in the trailers broke the client."""
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await grpc_stub.GetSession(s.GetSessionRequest(session_id="x" * 100_000))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert len(raised.value.details()) <= 512
    trailers = dict(raised.value.trailing_metadata())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    info = turn_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert info.reason == "SESSION_NOT_FOUND" and len(info.metadata["session_id"]) <= 200


async def test_an_envelope_claiming_more_than_a_port_reads_is_too_large_with_a_reason(http):
    envelope = struct.pack(">BI", 0, 2**31) + b"{}"
    answer = await http.post(
        WATCH, content=envelope, headers={"content-type": "application/connect+json"}
    )
    error = end_of_connect_stream(answer.content)
    assert error["code"] == "resource_exhausted"
    info = info_of_json(error)
    assert info.reason == "REQUEST_TOO_LARGE"
    assert dict(info.metadata) == {"field": "request", "limit": str(8 * 1024 * 1024)}


async def test_a_json_field_the_message_lacks_is_refused_by_name(http):
    """It was dropped: `{"titel": "x"}` made an untitled session."""
    create = "/blitz.v1.SessionService/CreateSession"
    answer = await http.post(create, json={"titel": "x"})
    assert answer.status_code == 400
    body = answer.json()
    info = info_of_json(body)
    assert (info.reason, info.metadata["field"]) == ("INVALID_ARGUMENT", "titel")
    assert "titel is not one of its fields" in body["message"]
    assert_ours(body["message"])

    request = json.dumps({"sessionId": "s", "turn": {"txt": "hi"}}).encode()
    nested = await http.post(
        "/blitz.v1.SessionService/RunTurn",
        content=struct.pack(">BI", 0, len(request)) + request,
        headers={"content-type": "application/connect+json"},
    )
    error = end_of_connect_stream(nested.content)
    assert info_of_json(error).metadata["field"] == "turn.txt"

    known = await http.post(create, json={"title": "x"})
    assert known.status_code == 200, "the same call with the field spelt right is served"


async def test_a_json_error_carries_its_error_info_as_json_too(http):
    """Connect's `debug`: a client without our descriptors reads the reason and the field,
    in a unary answer, a stream's end message and a refusal before any handler."""
    unary = (await http.post(LIST, json={"pageSize": "many"})).json()
    stream = end_of_connect_stream(
        (
            await http.post(
                WATCH, content=struct.pack(">BI", 1, 2) + b"{}",
                headers={"content-type": "application/connect+json"},
            )
        ).content
    )  # fmt: skip
    early = (await http.post(LIST, content=b"{}", headers={"content-type": "text/plain"})).json()
    for body in (unary, stream, early):
        [detail] = body["details"]  # type: ignore[misc]
        info = info_of_json(body)
        assert detail["debug"] == {
            "reason": info.reason,
            "metadata": dict(info.metadata),
            "message": info.message,
        }
    assert unary["details"][0]["debug"]["metadata"]["field"] == "page_size"  # type: ignore[index]
