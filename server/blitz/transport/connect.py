"""The Connect transport: Connect and gRPC-Web over ASGI, through the one adapter (`calls`).

Every method of every service is served by the handler `Calls` makes for it, on a
connectrpc ASGI app per service built from the service descriptors (`methods`); this
module supplies only what Connect does its own way: a call's context, and failures: a
`BlitzError` becomes a `ConnectError` whose detail is the `ErrorInfo`, mapped with one
table. The apps are mounted on the HTTP port's router (`blitz.transport.http`).

Compression: connectrpc compresses a stream's every message with what the client accepts,
however small, and has no size threshold; on small events gzip doubles the server's CPU.
So, unless `compress_streams` is set, the client's accept-encoding is dropped for
server-streaming calls and connectrpc answers them uncompressed, which every client must
accept. Requests may still arrive gzip-compressed, and unary responses are compressed as
negotiated.

gRPC-Web's text mode (base64), which connectrpc does not serve, is translated to its
binary mode in front of each app (`grpc_web_text`).

Refusals of connectrpc's own (a broken envelope, an unknown content type, a body that
does not decode) are answered like every other bad input, with an ErrorInfo and our words
(`connect_errors`, `undecodable`), and every error is cut to a size any client takes
(`error_size`).

No business logic here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NoReturn

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.descriptor_pb2 import MethodOptions

from blitz.errors import BlitzError, Status
from blitz.ports import Authenticate, CallContext, ServicePorts
from blitz.transport.calls import Calls
from blitz.transport.connect_errors import Guarded, InfoDetail, ProtocolErrors
from blitz.transport.error_size import fit_error
from blitz.transport.gate import MAX_REQUEST_BYTES, CallGate
from blitz.transport.grpc_web_text import GrpcWebText
from blitz.transport.http import MountedApp, Receive, Scope, Send
from blitz.transport.methods import SERVICES, methods_of
from blitz.transport.undecodable import Undecodable, undecodable

if TYPE_CHECKING:
    from connectrpc.codec import Codec
    from connectrpc.request import RequestContext

__all__ = ["CONNECT_CODES", "build_connect_apps"]

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

# Paths of the server-streaming methods, whose responses are left uncompressed.
_STREAM_PATHS = frozenset(
    method.path for service in SERVICES for method in methods_of(service) if method.streaming
)
# A method's idempotency option, as connectrpc names it.
_IDEMPOTENCY = {
    MethodOptions.IDEMPOTENCY_UNKNOWN: IdempotencyLevel.UNKNOWN,
    MethodOptions.NO_SIDE_EFFECTS: IdempotencyLevel.NO_SIDE_EFFECTS,
    MethodOptions.IDEMPOTENT: IdempotencyLevel.IDEMPOTENT,
}
# The request headers by which a client offers to accept compressed stream messages.
_STREAM_ACCEPT_ENCODING = frozenset({b"connect-accept-encoding", b"grpc-accept-encoding"})


def _to_connect_error(error: BlitzError) -> ConnectError:
    """The wire form of a BlitzError: its status's code, message, ErrorInfo detail."""
    error = fit_error(error)
    return ConnectError(
        CONNECT_CODES[error.status], error.message, details=[InfoDetail(error.to_proto())]
    )


class _ConnectWire:
    """What Connect supplies to the adapter (`calls.Wire`)."""

    name = "connect"

    def context(self, native: RequestContext[Any, Any]) -> CallContext:
        return _call_context(native)

    def request(self, received: Any) -> Any:
        if isinstance(received, Undecodable):
            raise received.error
        return received

    async def fail(self, native: RequestContext[Any, Any], error: BlitzError) -> NoReturn:
        raise _to_connect_error(error)


class _ServiceApp(ConnectASGIApplication[Calls]):
    """One service's methods as a Connect ASGI app, each served by the handler `Calls`
    makes for it."""

    # The service's path prefix, as the HTTP port's router mounts it (`MountedApp`).
    path: str = ""

    def __init__(self, service: ServiceDescriptor, calls: Calls, **options: Any) -> None:
        self.path = "/" + service.full_name
        endpoints: dict[str, Any] = {}
        for method in methods_of(service):
            info = MethodInfo(
                name=method.name,
                service_name=method.service,
                input=method.request,
                output=method.response,
                idempotency_level=_IDEMPOTENCY[method.idempotency],
                stream_type=StreamType.SERVER_STREAM if method.streaming else StreamType.UNARY,
            )
            make = Endpoint.server_stream if method.streaming else Endpoint.unary
            endpoints[method.path] = make(method=info, function=calls.handler(method))
        super().__init__(service=calls, endpoints=lambda _: endpoints, **options)


def _call_context(ctx: RequestContext[Any, Any]) -> CallContext:
    remaining_ms = ctx.timeout_ms
    return CallContext(
        deadline=None if remaining_ms is None else time.monotonic() + remaining_ms / 1000,
        metadata=dict(ctx.request_headers.items()),
        peer=ctx.client_address or "",
    )


class _ExplainedCodec:
    """A codec whose decoding failures reach the handler (`Undecodable`), which refuses
    them once the call is authenticated, with an ErrorInfo like every other bad input."""

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
            return Undecodable(undecodable(message_class.DESCRIPTOR.full_name, exc))


def build_connect_apps(
    ports: ServicePorts,
    gate: CallGate,
    *,
    authenticate: Authenticate | None = None,
    compress_streams: bool,
) -> list[MountedApp]:
    """The Connect (and gRPC-Web) ASGI apps of every service, for the HTTP port's router.

    `ports` serve the services by full name, one for each of `methods.SERVICES`
    (`blitz.ports.ServicePorts`); `authenticate` checks each call first (None: no token
    needed).
    """
    calls = Calls(ports, gate, _ConnectWire(), authenticate=authenticate)
    options = {
        "codecs": [
            _ExplainedCodec(codec)
            for codec in (
                google_protobuf_binary_codec(),
                google_protobuf_json_codec(ignore_unknown_fields=False),
            )
        ],
        "read_max_bytes": MAX_REQUEST_BYTES,
        "interceptors": [ProtocolErrors(_to_connect_error)],
    }
    apps: list[MountedApp] = []
    for service in SERVICES:
        app: Any = _ServiceApp(service, calls, **options)
        if not compress_streams and any(m.streaming for m in methods_of(service)):
            app = _UncompressedStreams(app)
        apps.append(GrpcWebText(Guarded(app, CONNECT_CODES), CONNECT_CODES))
    return apps


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
