"""The gRPC port: calls reach the core, errors come back as google.rpc.Status + ErrorInfo."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
import structlog
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status
from support.fake_core import SECRET, FakeCore

from blitz.errors import Status
from blitz.transport.grpc import GRPC_CODES
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_pb2_grpc import SessionServiceStub


def error_info(error: grpc.aio.AioRpcError) -> t.ErrorInfo:
    """The ErrorInfo carried in grpc-status-details-bin, as a client reads it."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no grpc-status-details-bin trailer"
    assert len(status.details) == 1
    info = t.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info


def test_every_status_has_a_grpc_code() -> None:
    assert set(GRPC_CODES) == set(Status)


async def test_a_call_reaches_the_core_with_deadline_metadata_and_peer(
    grpc_stub: SessionServiceStub, core: FakeCore
) -> None:
    session = await grpc_stub.CreateSession(
        s.CreateSessionRequest(title="hello"),
        timeout=30,
        metadata=(("x-client", "tests"), ("x-trace-bin", b"\x00")),
    )

    assert session.title == "hello"
    [ctx] = core.contexts
    assert ctx.deadline is not None
    # The server's clock starts when the call arrives and grpc rounds the wire timeout
    # up, so the deadline it sees may lie a little past the client's own.
    assert 25 < ctx.deadline - time.monotonic() <= 31
    assert ctx.metadata["x-client"] == "tests"
    assert "x-trace-bin" not in ctx.metadata
    assert ctx.peer.startswith("ipv4:127.0.0.1:")


async def test_blitz_error_arrives_as_its_status_with_error_info(
    grpc_stub: SessionServiceStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await grpc_stub.GetSession(s.GetSessionRequest(session_id="nope"))

    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "no session 'nope'"
    info = error_info(caught.value)
    assert info.reason == "SESSION_NOT_FOUND"
    assert dict(info.metadata) == {"session_id": "nope"}
    assert info.message == "no session 'nope'"


async def test_unexpected_exception_is_internal_and_hides_its_text(
    grpc_stub: SessionServiceStub,
) -> None:
    with structlog.testing.capture_logs() as logs, pytest.raises(grpc.aio.AioRpcError) as caught:
        await grpc_stub.CreateSession(s.CreateSessionRequest(title="boom"))

    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert SECRET not in (caught.value.details() or "")
    info = error_info(caught.value)
    assert info.reason == "INTERNAL"
    assert SECRET not in info.message
    [entry] = [e for e in logs if e["event"] == "unexpected error in call"]
    assert entry["log_level"] == "error"
    assert entry["exc_info"] is True
    assert entry["rpc"] == "CreateSession"


async def test_stream_delivers_events_then_fails_midway_with_error_info(
    grpc_stub: SessionServiceStub, core: FakeCore
) -> None:
    call = grpc_stub.RunTurn(s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="fail")))
    received = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for event in call:
            received.append(event.seq)

    assert received == [1, 2]
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    info = error_info(caught.value)
    assert info.reason == "MODEL_ERROR"
    assert core.closed_streams == 1


async def test_stream_crash_is_internal_and_hides_its_text(grpc_stub: SessionServiceStub) -> None:
    call = grpc_stub.RunTurn(s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="crash")))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in call:
            pass

    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert SECRET not in (caught.value.details() or "")
    assert (error_info(caught.value)).reason == "INTERNAL"


async def test_stream_that_ends_normally_is_ok(grpc_stub: SessionServiceStub) -> None:
    call = grpc_stub.RunTurn(s.RunTurnRequest(session_id="s-1", turn=t.Turn(text="hi")))
    assert [event.seq async for event in call] == [1, 2]
    assert await call.code() == grpc.StatusCode.OK


async def test_client_cancel_closes_the_core_stream(
    grpc_stub: SessionServiceStub, core: FakeCore
) -> None:
    call = grpc_stub.Watch(s.WatchRequest(session_id="s-1", follow=True))
    first = await call.read()
    assert first.seq == 1

    call.cancel()

    async with asyncio.timeout(5):
        await core.wait_until(lambda c: c.closed_streams == 1)


async def test_health_reports_serving(grpc_channel: grpc.aio.Channel) -> None:
    health = health_pb2_grpc.HealthStub(grpc_channel)
    reply = await health.Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    for service in ("blitz.v1.SessionService", "blitz.v1.WorkspaceService"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_lists_every_service(grpc_channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(grpc_channel)
    call = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    reply = await call.read()
    call.cancel()
    names = {service.name for service in reply.list_services_response.service}
    assert names == {
        "blitz.v1.SessionService",
        "blitz.v1.WorkspaceService",
        "blitz.v1.WebhookService",
        "blitz.v1.WorkflowService",
        "blitz.v1.ScheduleService",
        "blitz.v1.HookService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    }


async def test_a_request_that_does_not_decode_is_invalid_argument_with_error_info(
    grpc_channel: grpc.aio.Channel, core: FakeCore
) -> None:
    raw = {"request_serializer": None, "response_deserializer": None}
    create = grpc_channel.unary_unary("/blitz.v1.SessionService/CreateSession", **raw)
    run = grpc_channel.unary_stream("/blitz.v1.SessionService/RunTurn", **raw)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await create(b"\xff\xff\xff")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info(caught.value)
    assert (info.reason, info.metadata["field"]) == ("INVALID_ARGUMENT", "request")
    assert "blitz.v1.CreateSessionRequest" in info.message
    assert "parsing" not in info.message.lower(), "the decoder's own words stay in the log"

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in run(b"\x0a\x05ab"):
            pass
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).metadata["field"] == "request"
    assert core.contexts == []  # neither reached the core

    health = health_pb2_grpc.HealthStub(grpc_channel)
    reply = await health.Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def _reflect(
    channel: grpc.aio.Channel, request: reflection_pb2.ServerReflectionRequest
) -> reflection_pb2.ServerReflectionResponse:
    call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(iter([request]))
    reply = await call.read()
    call.cancel()
    return reply  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("symbol", "file", "comment"),
    [
        ("blitz.v1.SessionService.Decide", "blitz/v1/session.proto", "Answers an ApprovalRequest"),
        ("blitz.v1.WorkspaceService.GetDiff", "blitz/v1/workspace.proto", "What changed"),
        ("blitz.v1.Decision.DECISION_ALWAYS", "blitz/v1/turn.proto", "This action only."),
        ("blitz.v1.DECISION_ALWAYS", "blitz/v1/turn.proto", "This action only."),
        ("blitz.v1.Turn.text", "blitz/v1/turn.proto", "UPPER_SNAKE_CASE"),
        ("grpc.health.v1.Health", "grpc_health/v1/health.proto", ""),
    ],
)
async def test_reflection_finds_methods_and_values_with_their_comments(
    grpc_channel: grpc.aio.Channel, symbol: str, file: str, comment: str
) -> None:
    """`describe blitz.v1.SessionService.Decide` was NOT_FOUND, and no comment was served."""
    reply = await _reflect(
        grpc_channel, reflection_pb2.ServerReflectionRequest(file_containing_symbol=symbol)
    )
    assert not reply.HasField("error_response"), reply.error_response
    files = {
        proto.name: proto
        for proto in map(
            descriptor_pb2.FileDescriptorProto.FromString,
            reply.file_descriptor_response.file_descriptor_proto,
        )
    }
    assert file in files
    comments = " ".join(
        location.leading_comments for location in files[file].source_code_info.location
    )
    assert comment in comments
    assert set(files[file].dependency) <= set(files), "its imports come with it"


async def test_reflection_still_says_not_found(grpc_channel: grpc.aio.Channel) -> None:
    reply = await _reflect(
        grpc_channel,
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="blitz.v1.Nothing"),
    )
    assert reply.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
