"""Fixtures for the webhook tests: real receivers on 127.0.0.1, and a server allowed to
reach them.

`receiver` is a `support.receiver.Receiver` (200 to everything unless a test sets its
`answer`); `hooked` is a server that may reach 127.0.0.0/8 (`--webhook-allow-private`),
with a short first backoff so that retries come within a test's patience; `wire` is a
client of it over the transport the test is parametrized with (`kind`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.webhooks import LOOPBACK
from support.wire import Wire, open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx


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
