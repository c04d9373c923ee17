"""Fixtures of the fuzz suite: a stock gRPC channel and an HTTP client of the server.

The suite's settings (seed, number of examples) are in `fuzz/profile.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import httpx
import pytest

from blitz.server import RunningServer


@pytest.fixture
async def channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    """A stock gRPC channel: grpc's defaults, so 4 MiB is the most it receives."""
    async with grpc.aio.insecure_channel(server.grpc_target) as opened:
        yield opened


@pytest.fixture
async def http(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.http_url) as client:
        yield client
