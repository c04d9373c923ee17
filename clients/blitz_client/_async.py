"""`AsyncBlitz`: the asyncio client, one method per call of SessionService, WorkspaceService,
WorkflowService, WebhookService, ScheduleService and HookService.

Its calls are grouped by what they are about, one class each: sessions
(`_session_calls.py`), turns and workflows (`_turn_calls.py`), answering and steering
turns (`_interaction_calls.py`), the workspace (`_workspace_calls.py`), webhooks
(`_webhook_calls.py`), schedules (`_schedule_calls.py`) and hooks (`_hook_calls.py`).
This module opens the client: it checks the token, parses the addresses and makes the
`Resumer` that every call goes through (`_calls.py`).

Each method builds its request from Python values (`_requests.py`), sends it through the
transport the URL picked (`_transport.py`) and returns the reply's useful part; pages are
fetched as they are read. What happens when the server goes away, a call sent again or a
dropped stream resumed without a duplicate, on the same address or the next one
(`_addresses.py`), is `_resume.py`'s: every call goes through the client's `Resumer`.
Nothing here reads the environment or retries on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from blitz_client._addresses import Addresses, parse_addresses
from blitz_client._hook_calls import HookCalls
from blitz_client._interaction_calls import InteractionCalls
from blitz_client._resume import Resumer
from blitz_client._schedule_calls import ScheduleCalls
from blitz_client._session_calls import SessionCalls
from blitz_client._transport import Transport, open_transport
from blitz_client._turn_calls import TurnCalls
from blitz_client._webhook_calls import WEBHOOK_EVENTS, WebhookCalls
from blitz_client._workspace_calls import WorkspaceCalls

__all__ = ["DEFAULT_URL", "WEBHOOK_EVENTS", "AsyncBlitz"]

DEFAULT_URL = "127.0.0.1:50051"
"""`blitz serve`'s gRPC address with its default flags."""

# What can travel in an `authorization: Bearer` header (RFC 6750 asks for less).
_TOKEN = re.compile(r"[!-~]+")


class AsyncBlitz(
    SessionCalls,
    TurnCalls,
    InteractionCalls,
    WorkspaceCalls,
    WebhookCalls,
    ScheduleCalls,
    HookCalls,
):
    """An asyncio client of a Blitz server, over gRPC or Connect.

    Args:
        url: `http://host:port` or `https://…` (Connect, the server's HTTP port), or
            `host:port`, `grpc://host:port`, `grpcs://host:port` (gRPC). Default: the
            local server's gRPC port. For several replicas, a sequence of addresses or one
            string of them separated by commas, all Connect URLs or all gRPC targets
            (ValueError otherwise): the client uses one at a time, the first to begin
            with, and moves on to the next when its server is gone or leaving.
        token: sent as `authorization: Bearer TOKEN` on every call (ValueError unless it
            is printable ASCII without spaces).
        ca_file: a PEM file of the certificate authorities that a TLS server's certificate
            (`https://`, `grpcs://`) must chain to; default: the system's.
        reconnect_timeout: how long, in seconds, a dropped stream keeps trying to resume,
            and a call refused by a server that is shutting down keeps being sent again,
            before the last error is raised.

    `url` is the address in use now, and `urls` all of them, in the order given.

    Use it as `async with AsyncBlitz(url) as blitz:`; it must be opened inside the event
    loop that uses it.
    """

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        reconnect_timeout: float = 30.0,
    ) -> None:
        if token is not None and not _TOKEN.fullmatch(token):
            raise ValueError("token must be printable ASCII, without spaces")
        addresses = parse_addresses(url)
        ca = Path(ca_file).read_bytes() if ca_file else None

        def open_one(address: str) -> Transport:
            return open_transport(address, token=token, ca=ca)

        # Transports are opened on first use, so that a channel binds to the loop using it.
        self._addresses = Addresses(addresses, open_transport=open_one)
        self._resume = Resumer(self._addresses, reconnect_timeout=reconnect_timeout)

    @property
    def url(self) -> str:
        """The address in use now: the first given, until its server went away."""
        return self._addresses.current

    @property
    def urls(self) -> tuple[str, ...]:
        """Every address given, in order."""
        return self._addresses.all

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections; open streams end."""
        await self._addresses.close()
