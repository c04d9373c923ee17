"""gRPC-Web's text mode (`application/grpc-web-text`): the same calls as binary gRPC-Web,
in base64, a stream's pieces encoded as they are sent."""

from __future__ import annotations

import base64
import re
import struct
import urllib.parse

from google.rpc import status_pb2

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2

TEXT = "application/grpc-web-text+proto"
GET = "/blitz.v1.SessionService/GetSession"
RUN = "/blitz.v1.SessionService/RunTurn"


def framed(message: bytes) -> bytes:
    return struct.pack(">BI", 0, len(message)) + message


def decoded(body: bytes) -> bytes:
    """Concatenated base64 segments, each padded on its own, as gRPC-Web text allows."""
    return b"".join(base64.b64decode(seg) for seg in re.findall(rb"[^=]+=*", body))


def frames(body: bytes) -> list[tuple[int, bytes]]:
    found = []
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        found.append((flags, body[5 : 5 + size]))
        body = body[5 + size :]
    return found


def trailers(data: bytes) -> dict[str, str]:
    lines = data.decode().strip().split("\r\n")
    return {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}


async def test_a_stream_answers_in_text_mode_event_by_event(http):
    request = s.RunTurnRequest(session_id="s-1", turn=turn_pb2.Turn(text="hello"))
    body = base64.b64encode(framed(request.SerializeToString()))
    async with http.stream(
        "POST", RUN, content=body, headers={"content-type": TEXT, "x-grpc-web": "1"}
    ) as answer:
        assert answer.headers["content-type"] == TEXT
        pieces = [piece async for piece in answer.aiter_raw()]
    found = frames(decoded(b"".join(pieces)))
    events = [turn_pb2.TurnEvent.FromString(data) for flags, data in found if flags == 0]
    assert [event.seq for event in events] == [1, 2]
    flags, data = found[-1]
    assert flags == 0x80 and trailers(data)["grpc-status"] == "0"


async def test_an_error_keeps_its_error_info_in_text_mode(http):
    request = s.GetSessionRequest(session_id="nope")
    answer = await http.post(
        GET,
        content=base64.b64encode(framed(request.SerializeToString())),
        headers={"content-type": TEXT},
    )
    assert answer.headers["content-type"] == TEXT
    status = answer.headers.get("grpc-status")
    details = answer.headers.get("grpc-status-details-bin")
    if status is None:  # sent as a trailer frame inside the body
        [(flags, data)] = frames(decoded(answer.content))
        assert flags == 0x80
        found = trailers(data)
        status, details = found["grpc-status"], found["grpc-status-details-bin"]
    assert status == "5"
    info = turn_pb2.ErrorInfo()
    rich = status_pb2.Status.FromString(base64.b64decode(details + "=" * (-len(details) % 4)))
    rich.details[0].Unpack(info)
    assert info.reason == "SESSION_NOT_FOUND"


async def test_a_body_sent_as_separately_padded_chunks_is_read_whole(http):
    message = framed(s.GetSessionRequest(session_id="nope").SerializeToString())
    body = base64.b64encode(message[:4]) + base64.b64encode(message[4:])
    assert b"=" in body[:-2]  # padding inside the body, not only at its end
    answer = await http.post(GET, content=body, headers={"content-type": TEXT})
    assert answer.headers["content-type"] == TEXT
    assert "SESSION_NOT_FOUND" in _reason(answer)


async def test_a_body_that_is_not_base64_is_invalid_argument(http):
    answer = await http.post(GET, content=b"not base64!", headers={"content-type": TEXT})
    assert answer.status_code == 200
    assert answer.headers["grpc-status"] == "3"
    message = urllib.parse.unquote(answer.headers["grpc-message"])
    assert "not base64" in message
    assert _reason(answer) == "INVALID_ARGUMENT"


def _reason(answer) -> str:  # type: ignore[no-untyped-def]
    details = answer.headers.get("grpc-status-details-bin")
    if details is None:
        [(_, data)] = frames(decoded(answer.content))
        details = trailers(data)["grpc-status-details-bin"]
    rich = status_pb2.Status.FromString(base64.b64decode(details + "=" * (-len(details) % 4)))
    info = turn_pb2.ErrorInfo()
    rich.details[0].Unpack(info)
    return info.reason
