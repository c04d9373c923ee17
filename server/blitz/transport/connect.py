"""The Connect transport: Connect and gRPC-Web over ASGI through `connectrpc`.

`ConnectSessionService` and `ConnectWorkspaceService` implement the generated service
protocols over the session and workspace ports: each call builds a `CallContext`, calls
the port and maps failures with one table. A `BlitzError` becomes a `ConnectError` whose
detail is the `ErrorInfo`; any other exception is logged with its traceback and becomes
INTERNAL with a generic message (`unexpected`). Its text never reaches the client. The
apps are mounted on the HTTP port's router (`blitz.transport.http`).

Compression: connectrpc compresses a stream's every message with what the client accepts,
however small, and has no size threshold; on small events gzip doubles the server's CPU.
So, unless `compress_streams` is set, the client's accept-encoding is dropped for
server-streaming calls and connectrpc answers them uncompressed, which every client must
accept. Requests may still arrive gzip-compressed, and unary responses are compressed as
negotiated.

Refusals of connectrpc's own (a broken envelope, an unknown content type) are answered
like every other bad input, with an ErrorInfo and our words (`connect_errors`), and every
error is cut to a size any client takes (`error_size`).

No business logic here.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_codecs
from connectrpc.errors import ConnectError
from protobuf.wkt import Any as AnyDetail

from blitz.errors import BlitzError, Status
from blitz.ports import CallContext, SessionPort, WorkspacePort
from blitz.transport.connect_errors import Guarded, ProtocolErrors
from blitz.transport.error_size import fit_error
from blitz.transport.gate import MAX_REQUEST_BYTES, CallGate
from blitz.transport.http import MountedApp, Receive, Scope, Send
from blitz.transport.undecodable import undecodable
from blitz.transport.unexpected import unexpected_as_internal
from blitz.v1 import session_pb2, turn_pb2
from blitz.v1.session_connect import SessionServiceASGIApplication
from blitz.v1.workspace_connect import WorkspaceServiceASGIApplication

if TYPE_CHECKING:
    from connectrpc.codec import Codec
    from connectrpc.request import RequestContext

__all__ = [
    "CONNECT_CODES",
    "ConnectSessionService",
    "ConnectWorkspaceService",
    "build_connect_apps",
]

_REQ = TypeVar("_REQ")
_RES = TypeVar("_RES")

# The one table from our canonical statuses to Connect's.
CONNECT_CODES: dict[Status, Code] = {
    Status.INVALID_ARGUMENT: Code.INVALID_ARGUMENT,
    Status.NOT_FOUND: Code.NOT_FOUND,
    Status.ALREADY_EXISTS: Code.ALREADY_EXISTS,
    Status.FAILED_PRECONDITION: Code.FAILED_PRECONDITION,
    Status.PERMISSION_DENIED: Code.PERMISSION_DENIED,
    Status.UNAUTHENTICATED: Code.UNAUTHENTICATED,
    Status.RESOURCE_EXHAUSTED: Code.RESOURCE_EXHAUSTED,
    Status.CANCELLED: Code.CANCELED,
    Status.DEADLINE_EXCEEDED: Code.DEADLINE_EXCEEDED,
    Status.UNAVAILABLE: Code.UNAVAILABLE,
    Status.INTERNAL: Code.INTERNAL,
}

_ERROR_INFO_TYPE_URL = "type.googleapis.com/" + turn_pb2.ErrorInfo.DESCRIPTOR.full_name
_SERVICE = session_pb2.DESCRIPTOR.services_by_name["SessionService"]
# Paths of the server-streaming methods, whose responses are left uncompressed.
_STREAM_PATHS = frozenset(
    f"/{_SERVICE.full_name}/{method.name}" for method in _SERVICE.methods if method.server_streaming
)
# The request headers by which a client offers to accept compressed stream messages.
_STREAM_ACCEPT_ENCODING = frozenset({b"connect-accept-encoding", b"grpc-accept-encoding"})


def _to_connect_error(error: BlitzError) -> ConnectError:
    """The wire form of a BlitzError: its status's code, message, ErrorInfo detail."""
    error = fit_error(error)
    detail = AnyDetail(type_url=_ERROR_INFO_TYPE_URL, value=error.to_proto().SerializeToString())
    return ConnectError(CONNECT_CODES[error.status], error.message, details=[detail])


class _Adapter:
    """Runs a port method for a Connect call: gate, call context, error mapping."""

    def __init__(self, gate: CallGate) -> None:
        self._gate = gate

    async def _unary(
        self,
        rpc: str,
        method: Callable[[_REQ, CallContext], Awaitable[_RES]],
        request: _REQ,
        ctx: RequestContext[Any, Any],
    ) -> _RES:
        try:
            with unexpected_as_internal("call", rpc=rpc, transport="connect"), self._gate.unary():
                return await method(request, _call_context(ctx))
        except BlitzError as exc:
            raise _to_connect_error(exc) from None

    async def _stream(
        self,
        rpc: str,
        method: Callable[[_REQ, CallContext], AsyncIterator[_RES]],
        request: _REQ,
        ctx: RequestContext[Any, Any],
    ) -> AsyncIterator[_RES]:
        events: AsyncIterator[_RES] | None = None
        try:
            with (
                unexpected_as_internal("stream", rpc=rpc, transport="connect"),
                self._gate.stream(),
            ):
                events = method(request, _call_context(ctx))
                async for event in events:
                    yield event
        except BlitzError as exc:
            raise _to_connect_error(exc) from None
        finally:
            if events is not None and (aclose := getattr(events, "aclose", None)):
                await aclose()


class ConnectSessionService(_Adapter):
    """The generated `SessionService` protocol, delegating every call to its port."""

    def __init__(self, port: SessionPort, gate: CallGate) -> None:
        super().__init__(gate)
        self._port = port

    async def create_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("CreateSession", self._port.create_session, request, ctx)

    async def get_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("GetSession", self._port.get_session, request, ctx)

    async def list_sessions(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ListSessions", self._port.list_sessions, request, ctx)

    async def close_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("CloseSession", self._port.close_session, request, ctx)

    def run_turn(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        return self._stream("RunTurn", self._port.run_turn, request, ctx)

    def accept_plan(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        return self._stream("AcceptPlan", self._port.accept_plan, request, ctx)

    async def reject_plan(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("RejectPlan", self._port.reject_plan, request, ctx)

    def watch(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        return self._stream("Watch", self._port.watch, request, ctx)

    async def decide(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("Decide", self._port.decide, request, ctx)

    async def answer(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("Answer", self._port.answer, request, ctx)

    async def cancel(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("Cancel", self._port.cancel, request, ctx)

    async def steer(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("Steer", self._port.steer, request, ctx)

    async def get_usage(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("GetUsage", self._port.get_usage, request, ctx)

    async def list_rules(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ListRules", self._port.list_rules, request, ctx)

    async def revoke_rule(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("RevokeRule", self._port.revoke_rule, request, ctx)

    async def get_server_info(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("GetServerInfo", self._port.get_server_info, request, ctx)

    async def list_turns(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ListTurns", self._port.list_turns, request, ctx)

    async def update_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("UpdateSession", self._port.update_session, request, ctx)

    async def delete_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("DeleteSession", self._port.delete_session, request, ctx)

    async def fork_session(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ForkSession", self._port.fork_session, request, ctx)


class ConnectWorkspaceService(_Adapter):
    """The generated `WorkspaceService` protocol, delegating every call to its port."""

    def __init__(self, port: WorkspacePort, gate: CallGate) -> None:
        super().__init__(gate)
        self._port = port

    async def upload_image(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("UploadImage", self._port.upload_image, request, ctx)

    async def list_files(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ListFiles", self._port.list_files, request, ctx)

    async def read_file(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("ReadFile", self._port.read_file, request, ctx)

    async def get_diff(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        return await self._unary("GetDiff", self._port.get_diff, request, ctx)


def _call_context(ctx: RequestContext[Any, Any]) -> CallContext:
    remaining_ms = ctx.timeout_ms
    return CallContext(
        deadline=None if remaining_ms is None else time.monotonic() + remaining_ms / 1000,
        metadata=dict(ctx.request_headers.items()),
        peer=ctx.client_address or "",
    )


class _ExplainedCodec:
    """A codec whose decoding failures carry an ErrorInfo, like every other bad input."""

    def __init__(self, inner: Codec[Any, Any]) -> None:
        self._inner = inner

    def name(self) -> str:
        return self._inner.name()

    def encode(self, message: Any) -> bytes:
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            return self._inner.decode(data, message_class)
        except Exception as exc:
            name = message_class.DESCRIPTOR.full_name
            raise _to_connect_error(undecodable(name, exc)) from None


def build_connect_apps(
    sessions: SessionPort, workspaces: WorkspacePort, gate: CallGate, *, compress_streams: bool
) -> list[MountedApp]:
    """The Connect (and gRPC-Web) ASGI apps of both services, for the HTTP port's router."""
    codecs = [_ExplainedCodec(codec) for codec in google_protobuf_codecs()]
    explained = [ProtocolErrors(_to_connect_error)]
    session_app = SessionServiceASGIApplication(
        ConnectSessionService(sessions, gate),
        codecs=codecs,
        read_max_bytes=MAX_REQUEST_BYTES,
        interceptors=explained,
    )
    workspace_app = WorkspaceServiceASGIApplication(
        ConnectWorkspaceService(workspaces, gate),
        codecs=codecs,
        read_max_bytes=MAX_REQUEST_BYTES,
        interceptors=explained,
    )
    return [
        Guarded(
            session_app if compress_streams else _UncompressedStreams(session_app), CONNECT_CODES
        ),
        Guarded(workspace_app, CONNECT_CODES),
    ]


class _UncompressedStreams:
    """A Connect app whose server streams are answered uncompressed (see the module doc)."""

    def __init__(self, app: MountedApp) -> None:
        self._app = app
        self.path: str = app.path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("path") in _STREAM_PATHS:
            scope = {
                **scope,
                "headers": [
                    (name, value)
                    for name, value in scope["headers"]
                    if name.lower() not in _STREAM_ACCEPT_ENCODING
                ],
            }
        await self._app(scope, receive, send)
