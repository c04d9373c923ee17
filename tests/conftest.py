"""Shared fixtures: real Blitz servers on 127.0.0.1 and real clients for each transport.

`wire` is parametrized over gRPC (grpcio) and Connect (connectrpc): a test written once
against it runs through both real clients (see wire.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from wire import Wire, open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    base = Settings(
        grpc_port=0,
        http_port=0,
        data_dir=data_dir,
        database=str(data_dir / "blitz.db"),
        workspace_root=data_dir / "workspaces",
        log_format="console",
        drain_timeout=2.0,
        command_timeout=20.0,
    )
    return replace(base, **overrides)


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


@pytest.fixture
def wire_factory() -> Callable[[str, RunningServer], Wire]:
    return open_wire
