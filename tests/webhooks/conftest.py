"""Fixtures for the webhook tests: real receivers on 127.0.0.1, and a server allowed to
reach them.

`receiver` is a `support.receiver.Receiver` (200 to everything unless a test sets its
`answer`); `silent` a receiver that accepts every connection and never answers; `hooked`
is a server that may reach 127.0.0.0/8 (`--webhook-allow-private`), with a short first
backoff so that retries come within a test's patience; `wire` is a client of it over the
transport the test is parametrized with (`kind`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace

import httpx
import pytest
from support.links import ALICE, PUBLIC, SIGNING_SECRET, SLACK_USERS
from support.receiver import Receiver
from support.webhooks import LOOPBACK
from support.wire import Wire, open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


class Silent:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers: the
    dead receiver that holds a sender for its whole timeout. It counts the connections
    open at once, and the most ever open."""

    def __init__(self) -> None:
        self.open = 0
        self.most = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    async def __aenter__(self) -> Silent:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for writer in self._writers:
            writer.close()  # its handler sees the end and returns
        await self._idle.wait()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook"

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.most = max(self.most, self.open)
        self._idle.clear()
        self._writers.add(writer)
        try:
            while await reader.read(65536):
                pass  # the request is read, and never answered
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            self.open -= 1
            if not self.open:
                self._idle.set()
            writer.close()

    async def wait_for_open(self, n: int, within: float = 30.0) -> None:
        """Wait until `n` connections are open at once."""
        deadline = time.monotonic() + within
        while self.open < n:
            assert time.monotonic() < deadline, f"only {self.open} connections open"
            await asyncio.sleep(0.02)


@pytest.fixture
async def silent() -> AsyncIterator[Silent]:
    async with Silent() as server:
        yield server


@pytest.fixture
def hooked_settings(settings: Settings) -> Settings:
    return replace(settings, webhook_allow_private=LOOPBACK, webhook_retry_delay=0.3)


@pytest.fixture
async def hooked(hooked_settings: Settings) -> AsyncIterator[RunningServer]:
    async with running_server(hooked_settings) as running:
        yield running


@pytest.fixture(params=["grpc", "connect"])
async def client(request: pytest.FixtureRequest, hooked: RunningServer) -> AsyncIterator[Wire]:
    wire = open_wire(request.param, hooked)
    try:
        yield wire
    finally:
        await wire.close()


# Approval links and Slack's buttons (test_links.py, test_slack_actions.py)


@pytest.fixture
def linked_settings(hooked_settings: Settings) -> Settings:
    """A server whose webhooks carry links (a public URL), with two principals and an
    admin, and a Slack app whose users are mapped to principals."""
    return replace(
        hooked_settings,
        public_url=PUBLIC,
        tokens="alice:alice-token-1234,bob:bob-token-5678,root:root-token-0000:admin",
        slack_signing_secret=SIGNING_SECRET,
        slack_users=SLACK_USERS,
    )


@pytest.fixture
async def linked(linked_settings: Settings) -> AsyncIterator[RunningServer]:
    async with running_server(linked_settings) as running:
        yield running


@pytest.fixture
async def alice(linked: RunningServer) -> AsyncIterator[Wire]:
    """Alice's client of `linked`, over Connect."""
    wire = open_wire("connect", linked, ALICE)
    try:
        yield wire
    finally:
        await wire.close()


@pytest.fixture
async def web(linked: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client of `linked`'s HTTP port, as a browser or Slack reaches it."""
    async with httpx.AsyncClient(base_url=linked.http_url) as client:
        yield client
