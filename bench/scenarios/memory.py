"""`memory`: the server's memory under streaming load, with readers that never read.

On a fresh server, `--memory-streams` sessions each run a short first turn. Then
`--memory-readers` gRPC and as many Connect clients attach to them (`Watch` with
`follow`, spread over the sessions): each reads one event, to be sure it is attached, and
never reads again. Then each session runs a `stream: --memory-chunks` turn, read to
the end by the client that started it; a reader the server cuts off for falling too far
behind (SLOW_CONSUMER) resumes with Watch(after_seq), as a client must, and the table says
how often it did. A slow reader must cost the server a bounded
amount of memory, whatever the turns stream.

- peak RSS: the server's VmHWM at the end (its high-water mark), and VmRSS sampled every
  100 ms while the turns ran;
- `/healthz` latency while the turns ran, from a prober in a process of its own
  (`bench/probe.py`), every 100 ms on a new connection;
- RSS after: once the turns are done and the readers gone, after a settle.

The full load of the issue is `--memory-streams 20 --memory-chunks 200000
--memory-readers 1000`; the defaults are small enough for a quick run.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

import grpc

from bench.calls import (
    Stub,
    TurnTimes,
    create_sessions,
    open_stubs,
    run_to_end,
    run_to_end_resuming,
    warm_up,
)
from bench.probe import prober
from bench.procfs import usage
from bench.results import Result
from bench.servers import blitz_server
from bench.stats import now, percentile
from blitz.v1 import session_connect
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["NAME", "add_arguments", "run"]

NAME = "memory"

_PROBE_INTERVAL_S = 0.1
_SAMPLE_INTERVAL_S = 0.1
_SETTLE_S = 2.0
_ATTACH_CONCURRENCY = 50
_MB = 2**20

_TABLE = [
    ("peak_rss_mb", "peak server RSS under load (VmHWM)", "MB"),
    ("healthz_p50_ms", "/healthz latency during, p50", "ms"),
    ("healthz_p99_ms", "/healthz latency during, p99", "ms"),
    ("healthz_max_ms", "/healthz latency during, slowest", "ms"),
    ("healthz_errors", "/healthz probes failed or not 200", "probes"),
    ("rss_before_mb", "server RSS before (sessions made)", "MB"),
    ("rss_attached_mb", "server RSS with the readers attached", "MB"),
    ("rss_after_mb", "server RSS after, readers gone", "MB"),
    ("lost_deltas", "deltas lost by the turns' own streams", "deltas"),
    ("resumed", "times a turn's reader fell behind and resumed with Watch", "times"),
    ("load_s", "time the streaming turns took", "s"),
]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--memory-streams", type=int, default=2, help="concurrent streaming turns (default 2)"
    )
    group.add_argument(
        "--memory-chunks",
        type=int,
        default=50_000,
        help="chunks each of them streams (default 50000; the issue's: 200000)",
    )
    group.add_argument(
        "--memory-readers",
        type=int,
        default=25,
        help="idle readers per transport, gRPC and Connect each (default 25)",
    )


async def run(options: argparse.Namespace) -> Result:
    streams, chunks, readers = (
        options.memory_streams,
        options.memory_chunks,
        options.memory_readers,
    )
    result = Result(
        NAME,
        params={"streams": streams, "chunks": chunks, "readers_per_transport": readers},
    )
    print(
        f"memory: {streams} × stream: {chunks}, {readers} + {readers} readers that never read",
        flush=True,
    )
    async with (
        blitz_server() as server,
        open_stubs(server.grpc_target, options.channels, own_connections=False) as stubs,
    ):
        await warm_up(stubs)
        session_ids = await create_sessions(stubs, streams, title="memory")
        for session_id in session_ids:
            await run_to_end(stubs[0], TurnTimes(session_id), "hello")
        before = usage(server.pid)
        rss: list[float] = []
        async with (
            _grpc_readers(stubs, session_ids, readers),
            _connect_readers(server.http_url, session_ids, readers),
        ):
            attached = usage(server.pid)
            async with (
                prober(server.http_port, _PROBE_INTERVAL_S) as probes,
                _sampled(server.pid, rss),
            ):
                started = now()
                turns = [TurnTimes(session_id) for session_id in session_ids]
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        group.create_task(
                            run_to_end_resuming(stubs[i % len(stubs)], turn, f"stream: {chunks}")
                        )
                        for i, turn in enumerate(turns)
                    ]
                load_s = now() - started
        await asyncio.sleep(_SETTLE_S)
        after = usage(server.pid)
    failed = [turn.error for turn in turns if turn.error]
    if failed:
        raise RuntimeError(f"streaming turns failed: {failed}")
    row = {
        "peak_rss_mb": after.peak_rss / _MB,
        "healthz_p50_ms": percentile(probes, 50),
        "healthz_p99_ms": percentile(probes, 99),
        "healthz_max_ms": max(probes, default=float("nan")),
        "healthz_errors": probes.errors,
        "rss_before_mb": before.rss / _MB,
        "rss_attached_mb": attached.rss / _MB,
        "rss_after_mb": after.rss / _MB,
        "lost_deltas": streams * chunks - sum(task.result()[0] for task in tasks),
        "resumed": sum(task.result()[1] for task in tasks),
        "load_s": load_s,
        "probes": len(probes),
    }
    result.rows.append(row)
    result.series["rss_mb"] = rss
    for key, label, unit in _TABLE:
        result.add(key, label, row[key], unit)
    return result


@asynccontextmanager
async def _sampled(pid: int, into: list[float]) -> AsyncIterator[None]:
    """Appends the server's RSS in MB to `into` every 100 ms while the block runs."""

    async def sample() -> None:
        while True:
            into.append(usage(pid).rss / _MB)
            await asyncio.sleep(_SAMPLE_INTERVAL_S)

    task = asyncio.create_task(sample())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def _watch(session_ids: list[str], i: int) -> s.WatchRequest:
    return s.WatchRequest(session_id=session_ids[i % len(session_ids)], follow=True)


async def _attach_all(count: int, attach: Callable[[int], Awaitable[object]]) -> None:
    gate = asyncio.Semaphore(_ATTACH_CONCURRENCY)

    async def one(i: int) -> None:
        async with gate:
            await attach(i)

    async with asyncio.TaskGroup() as group:
        for i in range(count):
            group.create_task(one(i))


@asynccontextmanager
async def _grpc_readers(
    stubs: list[Stub], session_ids: list[str], count: int
) -> AsyncIterator[None]:
    """`count` gRPC Watch streams, each read once and then left unread until the exit."""
    calls: list[grpc.aio.UnaryStreamCall] = []

    async def attach(i: int) -> object:
        calls.append(stubs[i % len(stubs)].Watch(_watch(session_ids, i)))
        return await calls[-1].read()

    try:
        await _attach_all(count, attach)
        yield
    finally:
        for call in calls:
            call.cancel()


@asynccontextmanager
async def _connect_readers(url: str, session_ids: list[str], count: int) -> AsyncIterator[None]:
    """`count` Connect Watch streams on one client, each read once and then left unread."""
    streams: list[AsyncGenerator[t.TurnEvent, None]] = []

    async with session_connect.SessionServiceClient(url) as client:

        async def attach(i: int) -> object:
            stream = client.watch(_watch(session_ids, i))
            assert isinstance(stream, AsyncGenerator)
            streams.append(stream)
            return await anext(stream)

        try:
            await _attach_all(count, attach)
            yield
        finally:
            for stream in streams:
                await stream.aclose()
    await asyncio.sleep(0.05)  # pyqwest's threads let go of the connections (see blitz_client)
