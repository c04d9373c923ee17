"""`start`: how long `blitz serve` takes from being spawned to answering `/healthz` with 200.

Each run spawns `python -m blitz.cli serve` on fresh ports with a fresh data folder (so
the database is created, as on a first start), polls `/healthz` every 5 ms on a new
connection, and stops the server once it answers. Figures: the median of `--start-runs`
runs, and the fastest and slowest. The interpreter's start and Blitz's imports are part
of it: that is what a user or an orchestrator waits for.
"""

from __future__ import annotations

import argparse
import statistics

from bench.results import Result
from bench.servers import blitz_server

__all__ = ["NAME", "add_arguments", "run"]

NAME = "start"


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--start-runs", type=int, default=5, help="starts to time (default 5)")


async def run(options: argparse.Namespace) -> Result:
    result = Result(NAME, params={"runs": options.start_runs})
    print(f"start: {options.start_runs} starts", flush=True)
    times = []
    for _ in range(options.start_runs):
        async with blitz_server() as server:
            times.append(server.started_in)
    result.series["start_s"] = times
    median = statistics.median(times)
    result.add("median_s", f"spawn → /healthz 200, median of {len(times)}", median, "s")
    result.add("min_s", "spawn → /healthz 200, fastest", min(times), "s")
    result.add("max_s", "spawn → /healthz 200, slowest", max(times), "s")
    return result
