"""Streams stop when their reader goes, and many at once take turns: replays cannot freeze
the server.

Ten `curl -m 0.3` Watch calls on a long session used to burn the server's CPU for seconds
each, encoding the replay into connections that were gone (their writes returned at once,
so the replay never gave way to the loop that would notice). Here 300 such calls are
abandoned against a real server on a 25,000-event session: its health probe keeps
answering while they run, and its CPU is idle again seconds after the last one closes.
The bounds are far from what the fixed server needs, so a loaded machine passes them.

A flood of replays read to their end is bounded too: 300 Connect replays of 20,000 events
held the loop 3.3 s at once while they read pages of 1,000 events each, all together.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.replicas import replica_env

from blitz.store import SessionRecord, SqliteStore
from blitz.v1 import turn_pb2 as t

EVENTS = 25_000
CALLS = 300
SESSION = "s_" + "a" * 32


async def _seed(data: Path, events: int) -> None:
    """A session of `events` notices, written straight into the store."""
    async with SqliteStore(data / "blitz.db") as store:
        now = time.time()
        await store.create_session(
            SessionRecord(SESSION, "", "long", SESSION, "demo", create_time=now, update_time=now)
        )
        for start in range(0, events, 1000):
            batch = []
            for i in range(start, min(start + 1000, events)):
                event = t.TurnEvent(session_id=SESSION, notice=t.Notice(text=f"notice {i:06d}"))
                batch.append(event)
            await store.append_events(batch)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def long_session_server(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, int]]:
    """A real server on a session of EVENTS events (or the test's parameter): its URL and
    pid."""
    data = tmp_path / "data"
    data.mkdir()
    asyncio.run(_seed(data, getattr(request, "param", EVENTS)))
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "blitz.cli", "serve", "--grpc-port=0", "--http-port=0",
             f"--data-dir={data}", "--log-format=json"],
            env=replica_env(), stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    try:
        yield _serving(server, log), server.pid
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


async def test_abandoned_connect_watch_calls_neither_freeze_the_server_nor_burn_its_cpu(
    long_session_server: tuple[str, int],
):
    url, pid = long_session_server
    body = json.dumps({"sessionId": SESSION, "follow": True}).encode()
    request = struct.pack(">BI", 0, len(body)) + body  # one Connect envelope

    async def abandon(client: httpx.AsyncClient) -> None:
        try:
            async with client.stream(
                "POST",
                "/blitz.v1.SessionService/Watch",
                content=request,
                headers={"content-type": "application/connect+json"},
                timeout=0.3,
            ) as answer:
                async for _ in answer.aiter_bytes():
                    pass
        except httpx.HTTPError:
            pass  # abandoned after 0.3 s, as `curl -m 0.3` does

    slowest = 0.0
    async with httpx.AsyncClient(base_url=url) as probe:

        async def health() -> None:
            nonlocal slowest
            while True:
                started = time.perf_counter()
                answer = await probe.get("/healthz", timeout=30)
                assert answer.status_code == 200
                slowest = max(slowest, time.perf_counter() - started)
                await asyncio.sleep(0.05)

        probing = asyncio.create_task(health())
        limits = httpx.Limits(max_connections=CALLS)
        async with httpx.AsyncClient(base_url=url, limits=limits) as client:
            await asyncio.gather(*(abandon(client) for _ in range(CALLS)))
        probing.cancel()
    # The server's CPU over the 2 s from 3 s after the last close: idle again (before
    # the fix, 300 abandoned replays kept it busy for minutes).
    await asyncio.sleep(3)
    before = _cpu_seconds(pid)
    await asyncio.sleep(2)
    busy = _cpu_seconds(pid) - before
    assert slowest < 2.0, f"/healthz took {slowest:.2f} s while the calls ran"
    assert busy < 0.5, f"the server used {busy:.2f} s of CPU in 2 s after the last close"


FLOOD_EVENTS = 3_000
FLOOD_CALLS = 60


@pytest.mark.parametrize("long_session_server", [FLOOD_EVENTS], indirect=True)
async def test_a_flood_of_connect_watch_replays_leaves_the_health_probe_answering(
    long_session_server: tuple[str, int],
):
    """FLOOD_CALLS replays of the whole session at once, each read to its end, while a
    probe in a thread of its own (so that this process's busy loop adds nothing to what it
    measures) asks /healthz every 20 ms."""
    url, _ = long_session_server
    body = json.dumps({"sessionId": SESSION, "follow": False}).encode()
    request = struct.pack(">BI", 0, len(body)) + body

    async def replay(client: httpx.AsyncClient) -> int:
        got = 0
        async with client.stream(
            "POST",
            "/blitz.v1.SessionService/Watch",
            content=request,
            headers={"content-type": "application/connect+json"},
            timeout=60,
        ) as answer:
            async for chunk in answer.aiter_bytes():
                got += len(chunk)
        return got

    samples: list[float] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=url) as client:
            while not done.is_set():
                started = time.perf_counter()
                assert client.get("/healthz", timeout=30).status_code == 200
                samples.append(time.perf_counter() - started)
                time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        limits = httpx.Limits(max_connections=FLOOD_CALLS)
        async with httpx.AsyncClient(base_url=url, limits=limits) as client:
            sizes = await asyncio.gather(*(replay(client) for _ in range(FLOOD_CALLS)))
    finally:
        done.set()
        await asyncio.to_thread(prober.join)
    assert len(set(sizes)) == 1 and sizes[0] > FLOOD_EVENTS * 20, "every replay was whole"
    assert len(samples) >= 20, f"only {len(samples)} probes in the flood"
    # The replays take turns, a few bounded pages at a time, so the probe waits behind a
    # few pages' work: ~10-20 ms typical, under 100 ms for all on an idle 2-core machine
    # (before: a median of 315 ms and 1.4 s at worst, 100 replays of 20,000 events). The
    # bounds leave room for a loaded 2-core CI, where this test, its clients and the
    # server share the cores and any sample may land on a scheduler stall: 90% within
    # 100 ms, none over a second.
    fast = sum(took < 0.1 for took in samples) / len(samples)
    assert fast >= 0.9, f"{fast:.0%} of /healthz samples under 100 ms; slowest {max(samples):.2f} s"
    assert max(samples) < 1.0, f"/healthz took {max(samples):.2f} s during the flood"


def _serving(server: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{") and json.loads(line).get("event") == "serving":
                return f"http://127.0.0.1:{json.loads(line)['http_port']}"
        time.sleep(0.05)
    raise AssertionError(f"the server did not start:\n{log.read_text()}")
