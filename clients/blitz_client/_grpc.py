"""The gRPC transport, on grpc.aio; every AioRpcError becomes a BlitzError here.

The ErrorInfo travels in the `grpc-status-details-bin` trailer as a `google.rpc.Status`
detail; `grpc_status.rpc_status.from_call` decodes it. A call that failed because the
channel could not connect is marked `sent=False`: grpc says so only in the status's text.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

import grpc
from grpc_status import rpc_status

from blitz.v1 import (
    hooks_pb2_grpc,
    schedules_pb2_grpc,
    session_pb2_grpc,
    turn_pb2,
    webhooks_pb2_grpc,
    workflow_pb2_grpc,
    workspace_pb2_grpc,
)
from blitz_client._errors import BlitzError, connection_hint
from blitz_client._services import service_of

__all__ = ["GrpcTransport"]

# gRPC's default reconnect backoff starts at 1 s and grows to 120 s; a client resuming a
# stream across a server restart wants to notice the server is back within a second.
_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # An event carries a whole turn's output at its end (the repeat and `finished`), which
    # a very long answer takes past gRPC's default 4 MiB.
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
]


# How grpc-core begins the UNAVAILABLE of a call that no connection could carry (refused,
# timed out, reset during the handshake, a name that does not resolve): the call was
# never written to any server.
_NOT_CONNECTED = (
    "failed to connect to all addresses",
    "DNS resolution failed",
    "empty address list",
)


def _error(exc: grpc.aio.AioRpcError, *, target: str = "", tls: bool = False) -> BlitzError:
    info = None
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]  # AioRpcError quacks as a Call
    if status is not None:
        for detail in status.details:
            if detail.Is(turn_pb2.ErrorInfo.DESCRIPTOR):
                info = turn_pb2.ErrorInfo()
                detail.Unpack(info)
    name = exc.code().name.lower()
    # Connect's spelling, so that BlitzError.code is the same on both transports.
    code = "canceled" if name == "cancelled" else name
    details = exc.details() or ""
    sent = not (exc.code() == grpc.StatusCode.UNAVAILABLE and details.startswith(_NOT_CONNECTED))
    if exc.code() == grpc.StatusCode.UNAVAILABLE and info is None:
        details = connection_hint(details, tls=tls, plain=target, secure=f"grpcs://{target}")
    return BlitzError.from_info(code, info, details, sent=sent)


class GrpcTransport:
    """Blitz's services over one grpc.aio channel."""

    def __init__(
        self, target: str, *, headers: Mapping[str, str], tls: bool, ca: bytes | None = None
    ) -> None:
        self._target, self._tls = target, tls
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=ca)
            self._channel = grpc.aio.secure_channel(target, credentials, options=_OPTIONS)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=_OPTIONS)
        self._stubs: dict[str, Any] = {
            "SessionService": session_pb2_grpc.SessionServiceStub(self._channel),
            "WorkspaceService": workspace_pb2_grpc.WorkspaceServiceStub(self._channel),
            "WebhookService": webhooks_pb2_grpc.WebhookServiceStub(self._channel),
            "WorkflowService": workflow_pb2_grpc.WorkflowServiceStub(self._channel),
            "ScheduleService": schedules_pb2_grpc.ScheduleServiceStub(self._channel),
            "HookService": hooks_pb2_grpc.HookServiceStub(self._channel),
        }
        self._metadata = tuple(headers.items())

    def _callable(self, method: str) -> Any:
        return getattr(self._stubs[service_of(method)], method)

    async def unary(self, method: str, request: Any) -> Any:
        call = self._callable(method)
        try:
            return await call(request, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            raise _error(exc, target=self._target, tls=self._tls) from None

    async def stream(self, method: str, request: Any) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        call = self._callable(method)(request, metadata=self._metadata)
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as exc:
            raise _error(exc, target=self._target, tls=self._tls) from None
        finally:
            # The consumer may stop early; the server then stops streaming at once.
            call.cancel()

    async def close(self) -> None:
        await self._channel.close()
