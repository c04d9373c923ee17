"""Fixtures for the transport tests: both ports on 127.0.0.1 over a FakeCore, and clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from support.fake_core import FakeCore
from support.servers import make_settings

from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.v1.session_connect import SessionServiceClient
from blitz.v1.session_pb2_grpc import SessionServiceStub


@pytest.fixture
def core() -> FakeCore:
    return FakeCore()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path, drain_timeout=5.0)


@pytest.fixture
async def server(settings: Settings, core: FakeCore) -> AsyncIterator[RunningServer]:
    async with running_server(settings, ports=core.ports) as running:
        yield running


@pytest.fixture
async def grpc_channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(server.grpc_target) as channel:
        yield channel


@pytest.fixture
def grpc_stub(grpc_channel: grpc.aio.Channel) -> SessionServiceStub:
    return SessionServiceStub(grpc_channel)


@pytest.fixture
async def connect_client(server: RunningServer) -> AsyncIterator[SessionServiceClient]:
    async with SessionServiceClient(server.http_url) as client:
        yield client
