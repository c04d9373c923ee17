"""The HTTP port's probes on a whole server: alive (`/healthz`) and ready (`/readyz`)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from support.servers import make_settings
from support.waiting import wait_until

from blitz.server import RunningServer, running_server
from blitz.store import SqliteStore


async def test_ready_while_serving_and_not_once_draining(tmp_path: Path):
    settings = make_settings(tmp_path / "data", drain_delay=0.5)
    stack = AsyncExitStack()
    server: RunningServer = await stack.enter_async_context(running_server(settings))
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        ready = await http.get("/readyz")
        assert (ready.status_code, ready.text) == (200, "ready\n")
        assert (await http.head("/readyz")).status_code == 200
        drain = asyncio.create_task(stack.aclose())
        assert await wait_until(lambda: not server.gate.serving, within=5)
        async with httpx.AsyncClient(base_url=server.http_url) as fresh:
            during = await fresh.get("/readyz")
        await drain
    assert (during.status_code, during.text) == (503, "shutting down\n")


async def test_not_ready_while_the_store_does_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    async with running_server(make_settings(tmp_path / "data")) as server:
        async with httpx.AsyncClient(base_url=server.http_url) as http:
            assert (await http.get("/readyz")).status_code == 200

            async def broken(self: SqliteStore) -> None:
                raise RuntimeError("disk gone")

            monkeypatch.setattr(SqliteStore, "ping", broken)
            not_ready = await http.get("/readyz")
            alive = await http.get("/healthz")
    assert (not_ready.status_code, not_ready.text) == (503, "the store does not answer\n")
    assert alive.status_code == 200, "alive is not ready: a restart would not help"


async def test_probes_need_no_token(tmp_path: Path):
    settings = replace(make_settings(tmp_path / "data"), tokens="alice:alice-token-1234")
    async with running_server(settings) as server:
        async with httpx.AsyncClient(base_url=server.http_url) as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).status_code == 200
