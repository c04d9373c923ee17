"""`replicas`: the same work on SQLite, on PostgreSQL, and on two replicas of PostgreSQL.

Three setups, a fresh database and fresh servers for each:

- `sqlite`: one `blitz serve` on its SQLite file (the default);
- `postgres`: one `blitz serve` on a throwaway PostgreSQL cluster (the tests' own,
  `tests/support/postgres.py`, from the system's binaries);
- `two`: two `blitz serve` on one such cluster, sharing one workspace folder;
- `workers`: one `blitz serve --workers 2` on such a cluster: two processes behind the
  same ports (each of the harness's channels a connection of its own, which the kernel
  gives to one of them).

On each, over grpcio, after a warm-up: a burst of `--replica-sessions` turns that park
on an approval (session I on replica I mod 2), each Decided on the *other* replica at
`--decide-rate` per second while its stream stays open on the first, so that the
decision and the resumed turn's events cross between processes; then
`--replica-streams` concurrent `stream: 2000` turns, spread the same way.

Figures per setup: turns parked per second in the burst, RunTurn→`approval_request`
p99, Decide→the turn's next event p99, deltas/s over the concurrent streams, and server
CPU (every Blitz process together) per parked turn, per resume and per delta. The
database's own CPU (every PostgreSQL process) is reported beside Blitz's, per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import grpc

from bench.calls import (
    Stub,
    TurnTimes,
    create_sessions,
    decide,
    deltas_in,
    open_stubs,
    read_to_end,
    run_to_park,
    warm_up,
)
from bench.procfs import child_pids, tree_cpu, usage
from bench.results import Result
from bench.servers import ROOT, BlitzServer, blitz_server
from bench.stats import ms, now, paced, percentile
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["NAME", "add_arguments", "run"]

NAME = "replicas"

SETUPS = {"sqlite": "SQLite, one process", "postgres": "PostgreSQL, one process",
          "two": "PostgreSQL, two replicas",
          "workers": "PostgreSQL, --workers 2"}  # fmt: skip

_CHUNKS = 2000
_SETTLE_S = 0.25

# The figures of each setup: key in the row, label, unit.
_FIGURES = [
    ("burst_rate", "turns parked per second, burst of {n}", "turns/s"),
    ("parked_p99_ms", "RunTurn→approval_request p99, burst of {n}", "ms"),
    ("decide_next_p99_ms", "Decide (other replica) at {rate:g}/s→next event p99", "ms"),
    ("park_cpu_ms", "Blitz CPU per turn, RunTurn to parked", "ms"),
    ("resume_cpu_ms", "Blitz CPU per resume, Decide to finished", "ms"),
    ("db_cpu_ms", "database CPU per turn, park and resume", "ms"),
    ("deltas_per_s", "deltas/s, {streams} concurrent stream: 2000", "/s"),
    ("cpu_us_per_delta", "Blitz CPU per delta, {streams} streams", "µs"),
    ("failed_turns", "turns that failed", "turns"),
]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--replica-sessions",
        type=int,
        default=300,
        help="parked turns in each setup's burst (default 300)",
    )
    group.add_argument(
        "--replica-streams",
        type=int,
        default=20,
        help="concurrent `stream: 2000` turns in each setup (default 20)",
    )
    group.add_argument(
        "--replica-setups",
        type=lambda text: [part for part in text.split(",") if part],
        default=list(SETUPS),
        help=f"which of {','.join(SETUPS)} to run (default all)",
    )


async def run(options: argparse.Namespace) -> Result:
    result = Result(
        NAME,
        params={
            "sessions": options.replica_sessions,
            "streams": options.replica_streams,
            "decide_rate": options.decide_rate,
            "setups": options.replica_setups,
        },
    )
    words = {
        "n": options.replica_sessions,
        "rate": options.decide_rate,
        "streams": options.replica_streams,
    }
    for setup in options.replica_setups:
        print(f"replicas: {SETUPS[setup]}", flush=True)
        async with _servers(setup) as (servers, database_pids):
            row = await _measure(servers, database_pids, options)
        row["setup"] = setup
        result.rows.append(row)
        for key, label, unit in _FIGURES:
            result.add(
                f"{setup}_{key}", f"{SETUPS[setup]}: {label.format(**words)}", row[key], unit
            )
    return result


@contextmanager
def _cluster() -> Iterator[str]:
    # The tests' own throwaway clusters: one implementation of initdb, start and stop.
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from support.postgres import cluster, why_unavailable
    finally:
        sys.path.remove(str(ROOT / "tests"))
    if why_unavailable():
        raise RuntimeError(f"no PostgreSQL for the replicas scenario: {why_unavailable()}")
    with cluster() as url:
        yield url


def _postmaster(url: str) -> int:
    """The pid of the cluster's postmaster, from its data folder's postmaster.pid."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])


def _database_cpu(postmaster: int | None) -> float:
    return 0.0 if postmaster is None else tree_cpu(postmaster)


@asynccontextmanager
async def _servers(setup: str) -> AsyncIterator[tuple[list[BlitzServer], int | None]]:
    async with AsyncExitStack() as stack:
        if setup == "sqlite":
            yield [await stack.enter_async_context(blitz_server())], None
            return
        url = stack.enter_context(_cluster())
        workspaces = stack.enter_context(tempfile.TemporaryDirectory(prefix="blitz-ws-"))
        flags = ["--database", url, "--workspace-root", workspaces]
        if setup == "workers":
            flags += ["--workers", "2"]
        count = 2 if setup == "two" else 1
        servers = [await stack.enter_async_context(blitz_server(flags)) for _ in range(count)]
        yield servers, _postmaster(url)


def _blitz_cpu(servers: list[BlitzServer]) -> float:
    """Every Blitz process's own CPU: each server's, and its workers' (`--workers`)."""
    pids = [pid for x in servers for pid in (x.pid, *child_pids(x.pid, named="blitz.cli"))]
    return sum(usage(pid).cpu for pid in pids)


async def _measure(
    servers: list[BlitzServer], postmaster: int | None, options: argparse.Namespace
) -> dict[str, Any]:
    size, streams = options.replica_sessions, options.replica_streams
    async with AsyncExitStack() as stack:
        per_server = [
            await stack.enter_async_context(open_stubs(server.grpc_target, 4)) for server in servers
        ]
        for stubs in per_server:
            await warm_up(stubs)

        def on(i: int) -> Stub:
            stubs = per_server[i % len(per_server)]
            return stubs[i // len(per_server) % len(stubs)]

        def other(i: int) -> Stub:
            return on(i + 1) if len(per_server) > 1 else on(i)

        ids = await create_sessions([on(i) for i in range(size)], size, title="parked")
        turns = [TurnTimes(session_id) for session_id in ids]
        # 1. The burst, each turn on its own replica.
        before, db_before, started = _blitz_cpu(servers), _database_cpu(postmaster), now()
        async with asyncio.TaskGroup() as group:
            parking = [
                group.create_task(run_to_park(on(i), turn, f"$ echo parked-{i}"))
                for i, turn in enumerate(turns)
            ]
        calls: list[grpc.aio.UnaryStreamCall] = [task.result() for task in parking]
        parked_all = max(turn.parked for turn in turns) - started
        await asyncio.sleep(_SETTLE_S)
        after_burst = _blitz_cpu(servers)
        park_cpu = after_burst - before
        # 2. Decide each on the other replica, its stream read on the first.
        async with asyncio.TaskGroup() as group:
            for call, turn in zip(calls, turns, strict=True):
                group.create_task(read_to_end(call, turn, resuming=True))
            async for i in paced(size, options.decide_rate):
                group.create_task(decide(other(i), turns[i]))
        await asyncio.sleep(_SETTLE_S)
        resume_cpu = _blitz_cpu(servers) - after_burst
        db_cpu = _database_cpu(postmaster) - db_before
        # 3. Concurrent streams.
        stream_ids = await create_sessions(
            [on(i) for i in range(streams)], streams, title="streams"
        )
        before, started = _blitz_cpu(servers), now()
        async with asyncio.TaskGroup() as group:
            delivered = [
                group.create_task(_stream(on(i), session_id))
                for i, session_id in enumerate(stream_ids)
            ]
        elapsed = now() - started
        await asyncio.sleep(_SETTLE_S)
        stream_cpu = _blitz_cpu(servers) - before
    deltas = sum(task.result() for task in delivered)
    return {
        "servers": len(servers),
        "burst_rate": size / parked_all,
        "parked_p99_ms": ms(percentile([turn.parked - turn.sent for turn in turns], 99)),
        "decide_next_p99_ms": ms(percentile([turn.resumed - turn.decided for turn in turns], 99)),
        "park_cpu_ms": ms(park_cpu) / size,
        "resume_cpu_ms": ms(resume_cpu) / size,
        "db_cpu_ms": ms(db_cpu) / size,
        "deltas_per_s": deltas / elapsed,
        "cpu_us_per_delta": stream_cpu * 1e6 / max(deltas, 1),
        "lost_deltas": streams * _CHUNKS - deltas,
        "failed_turns": sum(1 for turn in turns if turn.error),
    }


async def _stream(stub: Stub, session_id: str) -> int:
    request = s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=f"stream: {_CHUNKS}"))
    return sum([deltas_in(event) async for event in stub.RunTurn(request)])
