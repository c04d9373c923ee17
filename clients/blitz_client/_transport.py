"""The transport seam: one small interface that the gRPC and Connect modules implement.

`open_transport` picks the transport from the URL: `http://` and `https://` speak Connect
to the server's HTTP port; `grpc://host:port`, `grpcs://host:port` (TLS) and a bare
`host:port` speak gRPC. A transport only moves messages and translates its library's
errors into `BlitzError`; resuming, paging and argument handling live in the clients.

Methods are named as in the proto files ("GetSession", "RunTurn", "ReadFile"); the
transports find each one's service (`_services.py`), so that a caller never names it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from blitz.v1 import turn_pb2

__all__ = ["Transport", "is_connect", "open_transport"]


class Transport(Protocol):
    """Calls the methods of Blitz's services by their proto names."""

    async def unary(self, method: str, request: Any) -> Any:
        """One unary call; raises BlitzError."""
        ...

    def stream(self, method: str, request: Any) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """A server stream as an async generator; raises BlitzError. Close it with aclose()."""
        ...

    async def close(self) -> None: ...


def is_connect(url: str) -> bool:
    """Whether `url` is spoken to over Connect (else gRPC)."""
    return url.startswith(("http://", "https://"))


def open_transport(url: str, *, token: str | None = None, ca: bytes | None = None) -> Transport:
    """A transport for `url`; `token` is sent as `authorization: Bearer …` on every call.

    `ca` is PEM of the certificate authorities a TLS server must chain to (None: the
    system's). Must be called with an event loop running: grpc.aio binds its channel to it.
    """
    headers = {"authorization": f"Bearer {token}"} if token else {}
    if is_connect(url):
        from blitz_client._connect import ConnectTransport

        return ConnectTransport(url.rstrip("/"), headers=headers, ca=ca)
    from blitz_client._grpc import GrpcTransport

    if url.startswith("grpcs://"):
        return GrpcTransport(url.removeprefix("grpcs://"), headers=headers, tls=True, ca=ca)
    return GrpcTransport(url.removeprefix("grpc://"), headers=headers, tls=False)
