"""Shared fixtures: real Blitz servers on 127.0.0.1 and real clients for each transport.

`wire` is parametrized over gRPC and Connect: a test written once against it runs through
both of blitz_client's transports (see wire.py); `settings` are those of `server`, a real
server on a SQLite file under the test's folder (see support/servers.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from recording_io import RecordingIO
from support.servers import make_settings
from wire import Wire, open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server


@pytest.fixture
def io() -> RecordingIO:
    """A TurnIO that records what the agent emits (tests/recording_io.py)."""
    return RecordingIO()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder for one agent."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[RunningServer]:
    async with running_server(settings) as running:
        yield running


@pytest.fixture(params=["grpc", "connect"])
async def wire(request: pytest.FixtureRequest, server: RunningServer) -> AsyncIterator[Wire]:
    client = open_wire(request.param, server)
    try:
        yield client
    finally:
        await client.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Give pyqwest's threads (the Connect client's) a moment to let go before exit.

    A thread of theirs that still drops a connection while the interpreter finalizes
    aborts the process (SIGABRT), which would turn a green run red.
    """
    time.sleep(0.2)
