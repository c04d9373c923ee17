"""`long`: a thousand turns in one session, to see whether a turn costs more late than early.

One session on a fresh server (warmed up in another session), through the Python SDK
(`blitz_client.AsyncBlitz` over gRPC), runs `--long-turns` demo turns one after the
other (`hello I`, each echoed back).
Per turn: the time from the call to its `finished`. Server CPU is read around the first
and the last `--long-window` turns and around the whole run. A session whose history
costs something per turn shows a later window slower and dearer than the first.
"""

from __future__ import annotations

import argparse

from bench.procfs import usage
from bench.results import Result
from bench.servers import blitz_server
from bench.stats import ms, now, percentile
from blitz_client import AsyncBlitz

__all__ = ["NAME", "add_arguments", "run"]

NAME = "long"

# Turns in another session first, so that first-use costs stay out of the first window.
_WARMUP_TURNS = 5

_TABLE = [
    ("first_p50_ms", "turn latency p50, first {window} turns", "ms"),
    ("last_p50_ms", "turn latency p50, last {window} of {turns}", "ms"),
    ("growth", "turn latency p50, last / first", "×"),
    ("first_cpu_ms", "server CPU per turn, first {window}", "ms"),
    ("last_cpu_ms", "server CPU per turn, last {window}", "ms"),
    ("cpu_ms", "server CPU per turn, all {turns}", "ms"),
    ("rss_mb", "server RSS after {turns} turns", "MB"),
]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--long-turns", type=int, default=1000, help="turns in the session (default 1000)"
    )
    group.add_argument(
        "--long-window",
        type=int,
        default=50,
        help="turns at the start and at the end that are compared (default 50)",
    )


async def run(options: argparse.Namespace) -> Result:
    turns, window = options.long_turns, min(options.long_window, options.long_turns)
    result = Result(NAME, params={"turns": turns, "window": window})
    print(f"long: {turns} turns in one session", flush=True)
    latencies: list[float] = []
    cpu_marks: dict[int, float] = {}  # turns done -> server CPU seconds then
    async with blitz_server() as server, AsyncBlitz(server.grpc_target) as blitz:
        warm_up = await blitz.create_session(title="warm-up")
        for i in range(_WARMUP_TURNS):
            async for _ in blitz.run(warm_up.id, f"hello {i}"):
                pass
        session = await blitz.create_session(title="long")
        marks = {0, window, turns - window, turns}
        for i in range(turns):
            if i in marks:
                cpu_marks[i] = usage(server.pid).cpu
            sent = now()
            async for event in blitz.run(session.id, f"hello {i}"):
                if event.HasField("finished") and event.finished.error.reason:
                    raise RuntimeError(f"turn {i} failed: {event.finished.error}")
            latencies.append(now() - sent)
        cpu_marks[turns] = usage(server.pid).cpu
        rss = usage(server.pid).rss

    def cpu_per_turn(first: int, last: int) -> float:
        return ms(cpu_marks[last] - cpu_marks[first]) / (last - first)

    first, last = latencies[:window], latencies[-window:]
    row = {
        "first_p50_ms": ms(percentile(first, 50)),
        "last_p50_ms": ms(percentile(last, 50)),
        "growth": percentile(last, 50) / percentile(first, 50),
        "first_cpu_ms": cpu_per_turn(0, window),
        "last_cpu_ms": cpu_per_turn(turns - window, turns),
        "cpu_ms": cpu_per_turn(0, turns),
        "rss_mb": rss / 2**20,
    }
    result.rows.append(row)
    result.series["latency_ms"] = [ms(v) for v in latencies]
    for key, label, unit in _TABLE:
        result.add(key, label.format(turns=turns, window=window), row[key], unit)
    return result
