"""A client that lets go of a stream is no fault: nothing is logged as a warning or error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import structlog
from support.fake_core import FakeCore
from support.servers import make_settings

from blitz.server import RunningServer, running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_pb2_grpc import SessionServiceStub


class Endless(FakeCore):
    """A Watch that streams for as long as anyone reads, some events large."""

    async def watch(self, req: s.WatchRequest, ctx: object) -> AsyncIterator[t.TurnEvent]:
        seq = 0
        while True:
            seq += 1
            size = 100_000 if seq % 3 == 0 else 10
            yield t.TurnEvent(seq=seq, session_id=req.session_id, text=t.Text(text="x" * size))


@pytest.fixture
async def endless(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(make_settings(tmp_path), ports=Endless().ports) as running:
        yield running


async def test_cancelled_grpc_watches_log_nothing_alarming(endless, caplog):
    caplog.set_level(logging.WARNING)
    with structlog.testing.capture_logs() as ours:
        for read in (0, 1, 5, 40):
            for leave in ("cancel", "close"):
                channel = grpc.aio.insecure_channel(endless.grpc_target)
                call = SessionServiceStub(channel).Watch(
                    s.WatchRequest(session_id="s", follow=True)
                )
                for _ in range(read):
                    await call.read()
                if leave == "cancel":
                    call.cancel()
                await channel.close()
        await asyncio.sleep(0.3)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [e for e in ours if e["log_level"] in ("warning", "error", "critical")] == []
