"""No file tool can stall the server: not a regular expression, not a fifo.

The event loop streams every session's events, so a tool that holds it (a pattern that
backtracks for ever holds the GIL too) freezes them all; and a call that blocks a worker
thread for ever takes that thread from every session.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import json_format
from support.recording_io import RecordingIO

from blitz.agent import Agent

if TYPE_CHECKING:
    from conftest import OpenSession, Session


@asynccontextmanager
async def loop_lag() -> AsyncIterator[list[float]]:
    """The longest the event loop went without running a 10 ms ticker, in seconds."""
    worst = [0.0]

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            worst[0] = max(worst[0], now - last - 0.01)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        yield worst
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)


async def test_a_catastrophic_pattern_neither_freezes_the_server_nor_runs_long(
    session: Session,
) -> None:
    """`(a+)+$` over 'a'*26 + '!' backtracks for seconds in Python's `re`, holding the GIL."""
    (session.workspace / "a.txt").write_text("a" * 26 + "!\n")
    started = time.monotonic()
    async with loop_lag() as lag:
        result = await session.call("search", pattern="(a+)+$", regex=True)
    assert result["matches"] == []
    assert time.monotonic() - started < 3
    assert lag[0] < 0.5, f"the event loop stalled for {lag[0]:.1f} s"


async def test_a_pattern_the_engine_cannot_run_is_an_error_result_in_our_words(
    session: Session,
) -> None:
    result = await session.call("search", pattern=r"(a)\1", regex=True)
    assert result["error"].startswith("the search cannot use this pattern")
    assert session.asked == 0


async def test_a_search_over_its_time_budget_says_so(workspace: Path, io: RecordingIO) -> None:
    for i in range(3):
        (workspace / f"{i}.txt").write_text("needle\n")
    async with Agent(search_budget=0.0) as agent:
        await agent.start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt='call search {"pattern": "needle"}',
        )
    [called] = io.of_kind("tool_result")
    result = json_format.MessageToDict(called.tool_result.result)
    assert "took longer than" in result["error"]
    assert result["truncated"] is True


async def test_fifos_stall_no_write_and_leave_every_other_write_free(
    open_session: OpenSession,
) -> None:
    """After `mkfifo`, an approved write to the fifo used to block a worker thread for ever;
    eight of them and no file change anywhere on the server could complete."""
    stuck = [await open_session() for _ in range(8)]
    for session in stuck:
        os.mkfifo(session.workspace / "f")
    free = await open_session()

    for tool, args in (
        ("write_file", {"path": "f", "content": "x"}),
        ("read_file", {"path": "f"}),
        ("edit_file", {"path": "f", "old_string": "x", "new_string": "y"}),
    ):
        results = await asyncio.gather(*(s.call(tool, **args) for s in stuck))
        assert all("is a fifo" in r["error"] for r in results), results
    written = await free.call("write_file", path="ok.txt", content="fine\n")
    assert written == {"path": "ok.txt", "bytes": 5}
