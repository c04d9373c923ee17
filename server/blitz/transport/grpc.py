"""The gRPC transport: Blitz's services on `grpc.aio`, through the one adapter (`calls`).

Every method of every service is served by the handler `Calls` makes for it (the method
table comes from the service descriptors, `methods`); this module supplies only what gRPC
does its own way: a call's context (deadline, metadata, peer), tolerant decoding
(`grpc_decoding`), and failures: a `BlitzError` aborts with the status of its reason and a
`google.rpc.Status` carrying the `ErrorInfo` in `grpc-status-details-bin`. Health and
reflection (`reflection`: every symbol, with the proto comments) are served beside them.

No business logic here: a rule about sessions or turns belongs to the core.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NoReturn

import grpc
from google.protobuf import any_pb2
from google.protobuf.descriptor import ServiceDescriptor
from google.rpc import status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from blitz.errors import BlitzError, Status
from blitz.ports import Authenticate, CallContext, ServicePorts
from blitz.transport.calls import Calls
from blitz.transport.error_size import fit_error
from blitz.transport.gate import MAX_REQUEST_BYTES, CallGate
from blitz.transport.grpc_decoding import NotOurs, tolerant
from blitz.transport.methods import SERVICES, methods_of
from blitz.transport.reflection import DescribedPool
from blitz.transport.tls import Tls
from blitz.transport.undecodable import Undecodable

__all__ = [
    "GRPC_CODES",
    "GatedHealthServicer",
    "bind_grpc_server",
    "build_grpc_server",
]

# The largest message grpcio reads at all (see build_grpc_server).
_GRPC_CEILING = 4 * MAX_REQUEST_BYTES

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


class _GrpcWire:
    """What gRPC supplies to the adapter (`calls.Wire`)."""

    name = "grpc"

    def context(self, native: grpc.aio.ServicerContext[Any, Any]) -> CallContext:
        return _call_context(native)

    def request(self, received: Any) -> Any:
        if isinstance(received, Undecodable):
            raise received.error
        return received

    async def fail(self, native: grpc.aio.ServicerContext[Any, Any], error: BlitzError) -> NoReturn:
        await _abort(native, error)


def _add_service(server: grpc.aio.Server, service: ServiceDescriptor, calls: Calls) -> None:
    """The service's methods as grpcio handlers, each decoding tolerantly (grpc_decoding),
    added both ways generated code adds them (registered ones are found faster)."""
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in methods_of(service):
        decode = tolerant(method.request.FromString, method.request.DESCRIPTOR.full_name)
        make = (
            grpc.unary_stream_rpc_method_handler
            if method.streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = make(
            calls.handler(method),
            request_deserializer=decode,
            response_serializer=method.response.SerializeToString,
        )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(service.full_name, handlers)]
    )
    server.add_registered_method_handlers(service.full_name, handlers)


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
        for service in SERVICES:
            await self.set(service.full_name, health_pb2.HealthCheckResponse.SERVING)

    async def Watch(self, request: Any, context: Any) -> None:
        try:
            with self._gate.stream():
                await super().Watch(request, context)
        except BlitzError:
            return  # ended by the drain, after NOT_SERVING went out


def build_grpc_server(
    ports: ServicePorts,
    gate: CallGate,
    health_servicer: health.aio.HealthServicer,
    *,
    authenticate: Authenticate | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    reuse_port: bool = False,
) -> grpc.aio.Server:
    """A `grpc.aio` server with Blitz's services, health and reflection; not yet bound.

    `ports` serve the services by full name, one for each of `methods.SERVICES`
    (`blitz.ports.ServicePorts`); `authenticate` checks each call first (None: no token
    needed). `interceptors` (tracing's) run outside Blitz's own, so they see every call
    whole. `reuse_port`: the port is shared with the other workers of `--workers`
    (SO_REUSEPORT), never otherwise.
    """
    server = grpc.aio.server(
        interceptors=[*interceptors, NotOurs(_abort)],
        options=[
            # SO_REUSEPORT is on by default in gRPC: a second server could share the port.
            ("grpc.so_reuseport", 1 if reuse_port else 0),
            # grpcio refuses a message past this before any of Blitz sees it, without an
            # ErrorInfo; below it the tolerant decoders refuse one past MAX_REQUEST_BYTES
            # with one. So only a request past the ceiling gets grpcio's bare refusal.
            ("grpc.max_receive_message_length", _GRPC_CEILING),
        ],
    )
    calls = Calls(ports, gate, _GrpcWire(), authenticate=authenticate)
    for service in SERVICES:
        _add_service(server, service, calls)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = (*(service.full_name for service in SERVICES), health.SERVICE_NAME)
    reflection.enable_server_reflection(
        (*names, reflection.SERVICE_NAME), server, pool=DescribedPool()
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
