"""The Connect transport, on connectrpc's async client; ConnectError becomes BlitzError here.

The ErrorInfo is a Connect error detail of type `blitz.v1.ErrorInfo`. connectrpc reports
a refused or dropped connection as `unavailable`, which the clients resume from, and a
connection that took too long to open as `deadline_exceeded`. In both cases pyqwest's
exception is the ConnectError's cause: a `ConnectionError` (its `ConnectTimeout` is one)
means no connection was made, so the request was never sent (`sent=False`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from connectrpc.errors import ConnectError
from pyqwest import Client, HTTPTransport

from blitz.v1 import (
    hooks_connect,
    schedules_connect,
    session_connect,
    turn_pb2,
    webhooks_connect,
    workflow_connect,
    workspace_connect,
)
from blitz_client._errors import BlitzError, connection_hint
from blitz_client._services import service_of

__all__ = ["ConnectTransport"]


def _error(exc: ConnectError, url: str = "") -> BaseException:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        # connectrpc reports our own cancellation as CANCELED; it must stay a cancellation
        # (a Ctrl-C in the sync client, a timeout around the call) rather than an error.
        return asyncio.CancelledError()
    info = None
    for detail in exc.details:
        if detail.type_name == "blitz.v1.ErrorInfo":
            info = turn_pb2.ErrorInfo.FromString(detail.message_bytes)
    sent = not isinstance(exc.__cause__, ConnectionError)
    message = exc.message
    if exc.code.value == "unavailable" and info is None:
        address = url.split("://", 1)[-1]
        message = connection_hint(
            message,
            tls=url.startswith("https://"),
            plain=f"http://{address}",
            secure=f"https://{address}",
        )
    return BlitzError.from_info(exc.code.value, info, message, sent=sent)


def _snake(method: str) -> str:
    """ "GetSession" -> "get_session", as the generated client names its methods."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower()


# How long close() waits for the HTTP client's threads to let go (see close()).
CLOSE_SETTLE_SECONDS = 0.05


class ConnectTransport:
    """Blitz's services over Connect (HTTP/1.1 or HTTP/2, binary protobuf)."""

    def __init__(self, url: str, *, headers: Mapping[str, str], ca: bytes | None = None) -> None:
        # Over plain HTTP both clients share pyqwest's default transport; over TLS they
        # share one of ours that trusts `ca` (else the system's authorities), which pyqwest's
        # default does not do.
        self._url = url
        self._tls: HTTPTransport | None = None
        self._http: Client | None = None
        if url.startswith("https://"):
            self._tls = HTTPTransport(tls_ca_cert=ca, tls_include_system_certs=ca is None)
            self._http = Client(self._tls)
        self._clients: dict[str, Any] = {
            "SessionService": session_connect.SessionServiceClient(url, http_client=self._http),
            "WorkspaceService": workspace_connect.WorkspaceServiceClient(
                url, http_client=self._http
            ),
            "WebhookService": webhooks_connect.WebhookServiceClient(url, http_client=self._http),
            "WorkflowService": workflow_connect.WorkflowServiceClient(url, http_client=self._http),
            "ScheduleService": schedules_connect.ScheduleServiceClient(url, http_client=self._http),
            "HookService": hooks_connect.HookServiceClient(url, http_client=self._http),
        }
        self._headers = dict(headers)

    def _callable(self, method: str) -> Any:
        return getattr(self._clients[service_of(method)], _snake(method))

    async def unary(self, method: str, request: Any) -> Any:
        call = self._callable(method)
        try:
            return await call(request, headers=self._headers)
        except ConnectError as exc:
            raise _error(exc, self._url) from None

    async def stream(self, method: str, request: Any) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        events = self._callable(method)(request, headers=self._headers)
        try:
            async for event in events:
                yield event
        except ConnectError as exc:
            raise _error(exc, self._url) from None
        finally:
            await events.aclose()

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        if self._tls is not None:
            await self._tls.aclose()
        # pyqwest's runtime threads finish dropping the connection a moment after close();
        # if the interpreter is already finalizing then, the process aborts (a PyO3 thread
        # cannot take the GIL at exit). A short settle here keeps short scripts safe.
        await asyncio.sleep(CLOSE_SETTLE_SECONDS)
