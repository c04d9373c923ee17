"""The transport seam: one small interface that the gRPC and Connect modules implement.

`open_transport` picks the transport from the URL: `http://` and `https://` speak Connect
to the server's HTTP port; `grpc://host:port`, `grpcs://host:port` (TLS) and a bare
`host:port` speak gRPC. A transport only moves messages and translates its library's
errors into `BlitzError`; resuming, paging and argument handling live in the clients.

Methods are named as in the proto files ("GetSession", "RunTurn", "ReadFile"); `SERVICES`
says which service each belongs to, so that a caller never names the service itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol

from blitz.v1 import session_pb2, turn_pb2, workspace_pb2

__all__ = ["SERVICES", "Transport", "open_transport", "service_of"]

SERVICES: Mapping[str, str] = {
    method.name: service.name
    for service in (
        session_pb2.DESCRIPTOR.services_by_name["SessionService"],
        workspace_pb2.DESCRIPTOR.services_by_name["WorkspaceService"],
    )
    for method in service.methods
}
"""Each method's service: "GetSession" -> "SessionService", "ReadFile" -> "WorkspaceService"."""


def service_of(method: str) -> str:
    """The service that serves `method`; ValueError for a name no service has."""
    try:
        return SERVICES[method]
    except KeyError:
        raise ValueError(f"no Blitz service has a method {method!r}") from None


class Transport(Protocol):
    """Calls SessionService and WorkspaceService methods by their proto names."""

    async def unary(self, method: str, request: Any) -> Any:
        """One unary call; raises BlitzError."""
        ...

    def stream(self, method: str, request: Any) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """A server stream as an async generator; raises BlitzError. Close it with aclose()."""
        ...

    async def close(self) -> None: ...


def open_transport(url: str, *, token: str | None = None) -> Transport:
    """A transport for `url`; `token` is sent as `authorization: Bearer …` on every call.

    Must be called with an event loop running: grpc.aio binds its channel to it.
    """
    headers = {"authorization": f"Bearer {token}"} if token else {}
    if url.startswith(("http://", "https://")):
        from blitz_client._connect import ConnectTransport

        return ConnectTransport(url.rstrip("/"), headers=headers)
    from blitz_client._grpc import GrpcTransport

    if url.startswith("grpcs://"):
        return GrpcTransport(url.removeprefix("grpcs://"), headers=headers, tls=True)
    return GrpcTransport(url.removeprefix("grpc://"), headers=headers, tls=False)
