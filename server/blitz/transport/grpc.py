"""The gRPC transport: `grpc.aio` servicers over the session and workspace ports.

Each call builds a `CallContext` (deadline, metadata, peer), calls the port and maps
failures to the wire: a `BlitzError` aborts with the status of its reason and a
`google.rpc.Status` carrying the `ErrorInfo` in `grpc-status-details-bin`; any other
exception is logged with its traceback and becomes INTERNAL with a generic message
(`unexpected`). Its text never reaches the client. Streams close the port's iterator
whatever way they end.

No business logic here: a rule about sessions or turns belongs to the core.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from blitz.errors import BlitzError, Status
from blitz.ports import CallContext, SessionPort, WorkspacePort
from blitz.transport.error_size import fit_error
from blitz.transport.gate import MAX_REQUEST_BYTES, CallGate, request_too_large
from blitz.transport.tls import Tls
from blitz.transport.undecodable import undecodable
from blitz.transport.unexpected import unexpected_as_internal
from blitz.v1 import session_pb2, session_pb2_grpc, turn_pb2, workspace_pb2, workspace_pb2_grpc

__all__ = [
    "GRPC_CODES",
    "GatedHealthServicer",
    "GrpcSessionService",
    "bind_grpc_server",
    "build_grpc_server",
]

# The largest message grpcio reads at all (see build_grpc_server).
_GRPC_CEILING = 4 * MAX_REQUEST_BYTES

_REQ = TypeVar("_REQ")
_RES = TypeVar("_RES")

# The one table from our canonical statuses to gRPC's.
GRPC_CODES: dict[Status, grpc.StatusCode] = {
    Status.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    Status.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Status.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    Status.FAILED_PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Status.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    Status.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Status.RESOURCE_EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Status.CANCELLED: grpc.StatusCode.CANCELLED,
    Status.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    Status.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Status.INTERNAL: grpc.StatusCode.INTERNAL,
}

_SERVICE_NAME = session_pb2.DESCRIPTOR.services_by_name["SessionService"].full_name
_WORKSPACE_NAME = workspace_pb2.DESCRIPTOR.services_by_name["WorkspaceService"].full_name


class _Undecodable:
    """What a request that failed to decode arrives as; its handler aborts with `error`."""

    __slots__ = ("error",)

    def __init__(self, error: BlitzError) -> None:
        self.error = error


class _DecodeFailuresAsInvalidArgument(grpc.aio.ServerInterceptor):
    """Decodes every request so that a failure reaches a handler instead of grpcio.

    grpcio answers a request it cannot decode with UNKNOWN and the decoder's text; here
    the handler receives an `_Undecodable` and aborts with INVALID_ARGUMENT and ErrorInfo.
    Blitz's handlers check for it themselves; the services that are not ours (health,
    reflection) have their handlers wrapped to check it first (`_checked`).
    """

    def __init__(self) -> None:
        # Each served method's handler and its tolerant one, made once: the handler is the
        # same object every call (a replaced one is wrapped afresh).
        self._made: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler  # no such method: not kept, whatever names callers make up
        method = handler_call_details.method
        made = self._made.get(method)
        if made is None or made[0] is not handler:
            made = self._made[method] = (handler, _tolerant(method, handler))
        return made[1]


def _tolerant(method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """`handler` with a decoder that hands a failure to the handler (`_Undecodable`)."""
    decode = getattr(handler, "request_deserializer", None)
    if decode is None:
        return handler
    ours = method.startswith("/blitz.v1.")
    if ours:
        name = "blitz.v1." + method.rsplit("/", 1)[-1] + "Request"
    else:
        message = getattr(decode, "__self__", None)
        name = getattr(getattr(message, "DESCRIPTOR", None), "full_name", "request")

    def tolerant(data: bytes) -> Any:
        if len(data) > MAX_REQUEST_BYTES:
            return _Undecodable(request_too_large())
        try:
            return decode(data)
        except Exception as exc:
            return _Undecodable(undecodable(name, exc))

    tolerant_handler = handler._replace(request_deserializer=tolerant)  # type: ignore[attr-defined]
    return tolerant_handler if ours else _checked(tolerant_handler)


def _checked(handler: Any) -> Any:
    """A handler of another service that aborts on an `_Undecodable` before its behaviour runs."""
    if handler.request_streaming:
        kind = "stream_stream" if handler.response_streaming else "stream_unary"
        behavior = getattr(handler, kind)

        async def requests(iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async for request in iterator:
                if isinstance(request, _Undecodable):
                    await _abort(context, request.error)
                yield request

        if inspect.isasyncgenfunction(behavior):

            async def streamed(iterator: Any, context: Any) -> AsyncIterator[Any]:
                async for response in behavior(requests(iterator, context), context):
                    yield response

            return handler._replace(**{kind: streamed})

        async def called(iterator: Any, context: Any) -> Any:
            return await behavior(requests(iterator, context), context)

        return handler._replace(**{kind: called})
    kind = "unary_stream" if handler.response_streaming else "unary_unary"
    behavior = getattr(handler, kind)
    if inspect.isasyncgenfunction(behavior):

        async def answers(request: Any, context: Any) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                await _abort(context, request.error)
            async for response in behavior(request, context):
                yield response

        return handler._replace(**{kind: answers})

    async def answer(request: Any, context: Any) -> Any:
        if isinstance(request, _Undecodable):
            await _abort(context, request.error)
        return await behavior(request, context)

    return handler._replace(**{kind: answer})


def _stream_handler(
    rpc: str, port_method: str
) -> Callable[[GrpcSessionService, Any, Any], AsyncIterator[turn_pb2.TurnEvent]]:
    """A server-streaming handler over `port.<port_method>`.

    grpc.aio recognises a streaming handler by it being an async generator function, so
    each stream gets its own, rather than a method returning a generator.
    """

    async def handler(
        self: GrpcSessionService, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[turn_pb2.TurnEvent]:
        events: AsyncIterator[turn_pb2.TurnEvent] | None = None
        try:
            with unexpected_as_internal("stream", rpc=rpc, transport="grpc"), self._gate.stream():
                if isinstance(request, _Undecodable):
                    raise request.error
                events = getattr(self._port, port_method)(request, _call_context(context))
                async for event in events:
                    yield event
                return
        except BlitzError as exc:
            error = exc
        finally:
            if events is not None and (aclose := getattr(events, "aclose", None)):
                await aclose()
        await _abort(context, error)

    handler.__name__ = handler.__qualname__ = rpc
    return handler


class _Adapter:
    """Runs a port method for a unary gRPC call: gate, call context, error mapping."""

    def __init__(self, gate: CallGate) -> None:
        self._gate = gate

    async def _unary(
        self,
        rpc: str,
        method: Callable[[_REQ, CallContext], Awaitable[_RES]],
        request: _REQ,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> _RES:
        # abort() raises, so it is called outside the try that catches the core's errors.
        try:
            with unexpected_as_internal("call", rpc=rpc, transport="grpc"), self._gate.unary():
                if isinstance(request, _Undecodable):
                    raise request.error
                return await method(request, _call_context(context))
        except BlitzError as exc:
            error = exc
        await _abort(context, error)


class GrpcSessionService(_Adapter, session_pb2_grpc.SessionServiceServicer):
    """`blitz.v1.SessionService` on `grpc.aio`, delegating every call to its port."""

    def __init__(self, port: SessionPort, gate: CallGate) -> None:
        super().__init__(gate)
        self._port = port

    async def CreateSession(self, request: Any, context: Any) -> session_pb2.Session:
        return await self._unary("CreateSession", self._port.create_session, request, context)

    async def GetSession(self, request: Any, context: Any) -> session_pb2.Session:
        return await self._unary("GetSession", self._port.get_session, request, context)

    async def ListSessions(self, request: Any, context: Any) -> session_pb2.ListSessionsResponse:
        return await self._unary("ListSessions", self._port.list_sessions, request, context)

    async def CloseSession(self, request: Any, context: Any) -> session_pb2.Session:
        return await self._unary("CloseSession", self._port.close_session, request, context)

    RunTurn = _stream_handler("RunTurn", "run_turn")
    AcceptPlan = _stream_handler("AcceptPlan", "accept_plan")
    Watch = _stream_handler("Watch", "watch")

    async def Decide(self, request: Any, context: Any) -> session_pb2.DecideResponse:
        return await self._unary("Decide", self._port.decide, request, context)

    async def Answer(self, request: Any, context: Any) -> session_pb2.AnswerResponse:
        return await self._unary("Answer", self._port.answer, request, context)

    async def Cancel(self, request: Any, context: Any) -> session_pb2.CancelResponse:
        return await self._unary("Cancel", self._port.cancel, request, context)

    async def Steer(self, request: Any, context: Any) -> session_pb2.SteerResponse:
        return await self._unary("Steer", self._port.steer, request, context)

    async def GetUsage(self, request: Any, context: Any) -> session_pb2.UsageReport:
        return await self._unary("GetUsage", self._port.get_usage, request, context)

    async def ListRules(self, request: Any, context: Any) -> session_pb2.ListRulesResponse:
        return await self._unary("ListRules", self._port.list_rules, request, context)

    async def RevokeRule(self, request: Any, context: Any) -> session_pb2.RevokeRuleResponse:
        return await self._unary("RevokeRule", self._port.revoke_rule, request, context)

    async def GetServerInfo(self, request: Any, context: Any) -> session_pb2.ServerInfo:
        return await self._unary("GetServerInfo", self._port.get_server_info, request, context)

    async def RejectPlan(self, request: Any, context: Any) -> session_pb2.RejectPlanResponse:
        return await self._unary("RejectPlan", self._port.reject_plan, request, context)

    async def ListTurns(self, request: Any, context: Any) -> session_pb2.ListTurnsResponse:
        return await self._unary("ListTurns", self._port.list_turns, request, context)

    async def UpdateSession(self, request: Any, context: Any) -> session_pb2.Session:
        return await self._unary("UpdateSession", self._port.update_session, request, context)

    async def DeleteSession(self, request: Any, context: Any) -> session_pb2.DeleteSessionResponse:
        return await self._unary("DeleteSession", self._port.delete_session, request, context)

    async def ForkSession(self, request: Any, context: Any) -> session_pb2.Session:
        return await self._unary("ForkSession", self._port.fork_session, request, context)


class GrpcWorkspaceService(_Adapter, workspace_pb2_grpc.WorkspaceServiceServicer):
    """`blitz.v1.WorkspaceService` on `grpc.aio`, delegating every call to its port."""

    def __init__(self, port: WorkspacePort, gate: CallGate) -> None:
        super().__init__(gate)
        self._port = port

    async def UploadImage(self, request: Any, context: Any) -> workspace_pb2.UploadImageResponse:
        return await self._unary("UploadImage", self._port.upload_image, request, context)

    async def ListFiles(self, request: Any, context: Any) -> workspace_pb2.ListFilesResponse:
        return await self._unary("ListFiles", self._port.list_files, request, context)

    async def ReadFile(self, request: Any, context: Any) -> workspace_pb2.ReadFileResponse:
        return await self._unary("ReadFile", self._port.read_file, request, context)

    async def GetDiff(self, request: Any, context: Any) -> workspace_pb2.GetDiffResponse:
        return await self._unary("GetDiff", self._port.get_diff, request, context)


class GatedHealthServicer(health.aio.HealthServicer):
    """The standard health service, whose Watch streams end when the server drains.

    Clients doing gRPC's client-side health checking hold one open; left to grpcio it
    would hold every shutdown to its full drain timeout.
    """

    def __init__(self, gate: CallGate) -> None:
        super().__init__()
        self._gate = gate

    async def serving(self) -> None:
        """Report Blitz's services serving by name too, as well as the server ("")."""
        for name in (_SERVICE_NAME, _WORKSPACE_NAME):
            await self.set(name, health_pb2.HealthCheckResponse.SERVING)

    async def Watch(self, request: Any, context: Any) -> None:
        try:
            with self._gate.stream():
                await super().Watch(request, context)
        except BlitzError:
            return  # ended by the drain, after NOT_SERVING went out


def build_grpc_server(
    sessions: SessionPort,
    workspaces: WorkspacePort,
    gate: CallGate,
    health_servicer: health.aio.HealthServicer,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> grpc.aio.Server:
    """A `grpc.aio` server with Blitz's services, health and reflection; not yet bound.

    `interceptors` (tracing's) run outside Blitz's own, so they see every call whole.
    """
    server = grpc.aio.server(
        interceptors=[*interceptors, _DecodeFailuresAsInvalidArgument()],
        options=[
            # SO_REUSEPORT is on by default in gRPC: a second server could share the port.
            ("grpc.so_reuseport", 0),
            # grpcio refuses a message past this before any of Blitz sees it, without an
            # ErrorInfo; below it the decoder above refuses one past MAX_REQUEST_BYTES with
            # one. So only a request past the ceiling gets grpcio's bare refusal.
            ("grpc.max_receive_message_length", _GRPC_CEILING),
        ],
    )
    session_pb2_grpc.add_SessionServiceServicer_to_server(
        GrpcSessionService(sessions, gate), server
    )
    workspace_pb2_grpc.add_WorkspaceServiceServicer_to_server(
        GrpcWorkspaceService(workspaces, gate), server
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (_SERVICE_NAME, _WORKSPACE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    return server


def bind_grpc_server(
    server: grpc.aio.Server, host: str, port: int, *, tls: Tls | None = None
) -> int:
    """Listen on host:port (0: any free port), over TLS when given; returns the bound port,
    or raises OSError."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        if tls is not None:
            credentials = grpc.ssl_server_credentials([(tls.key, tls.cert)])
            return server.add_secure_port(address, credentials)
        return server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot listen for gRPC on {address}: {exc}") from None


def _call_context(context: grpc.aio.ServicerContext[Any, Any]) -> CallContext:
    remaining = context.time_remaining()
    metadata = {
        key: value
        for key, value in (context.invocation_metadata() or ())
        if not key.endswith("-bin")
    }
    return CallContext(
        deadline=None if remaining is None else time.monotonic() + remaining,
        metadata=metadata,
        peer=context.peer() or "",
    )


async def _abort(context: grpc.aio.ServicerContext[Any, Any], error: BlitzError) -> NoReturn:
    error = fit_error(error)
    code = GRPC_CODES[error.status]
    detail = any_pb2.Any()
    detail.Pack(error.to_proto())
    status = status_pb2.Status(code=code.value[0], message=error.message, details=[detail])
    await context.abort(
        code,
        error.message,
        trailing_metadata=(("grpc-status-details-bin", status.SerializeToString()),),
    )
    raise AssertionError("unreachable: abort() raises")  # pragma: no cover
