"""`sessions`: many sessions start a turn at once, park on an approval, and are resumed,
on Blitz and on the floor (bench/floor_server.py), each figure beside the floor's.

For each size N, on a fresh server of each kind, over grpcio (the N streams spread over
`--channels` connections), after a few warm-up turns:

1. burst: N sessions each send `$ echo parked-I` at once. Per turn, RunTurn→`accepted`
   and RunTurn→`approval_request`; for the burst, the time from its first call to its
   last `accepted`, and turns parked per second (N over the time to the last park).
   Server CPU from the burst's start to the last park, per turn.
2. new turns alone: with all N still parked, `--new-turns` `hello I` turns in fresh
   sessions, started at `--new-rate` per second whatever the server does:
   RunTurn→`accepted`, →`finished`, and the server's CPU per such turn. They finish
   without parking, so exactly N stay parked throughout.
3. mixed: Decide(ONCE) on each parked turn, paced at `--decide-rate` per second, each
   turn's stream still open and read, while new turns go on at `--new-rate` in fresh
   sessions for as long as the Decides last: Decide→the turn's next event (its
   `resolution`), and the new turns' RunTurn→`accepted`. Server CPU per resume is the
   phase's CPU less the new turns' (at phase 2's cost each), over N; the `echo`
   commands' own CPU apart.

Latencies include this client's loop, which carries all N streams on one core of a
2-vCPU machine; CPU figures are the whole server process, so they include the idle
server's own ticking, which is reported too. The client and its pacing are the same for
both servers, so a ratio is the servers' difference.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import grpc

from bench.calls import (
    Stub,
    TurnTimes,
    create_sessions,
    decide,
    open_stubs,
    read_to_end,
    run_to_end,
    run_to_park,
    warm_up,
)
from bench.procfs import usage
from bench.results import Result
from bench.servers import blitz_server, floor_server
from bench.stats import ms, now, paced, percentile

__all__ = ["NAME", "add_arguments", "run"]

NAME = "sessions"

# After a phase, how long the server gets to finish its own work before CPU is read.
_SETTLE_S = 0.25

# The figures of the table, from the largest size: key in the row, label, unit.
_TABLE = [
    ("burst_all_accepted_ms", "burst of {n}: last accepted, from the burst's start", "ms"),
    ("burst_rate", "burst of {n}: turns parked per second", "turns/s"),
    ("burst_accepted_p50_ms", "burst of {n}: RunTurn→accepted p50", "ms"),
    ("burst_accepted_p99_ms", "burst of {n}: RunTurn→accepted p99", "ms"),
    ("burst_parked_p50_ms", "burst of {n}: RunTurn→approval_request p50", "ms"),
    ("burst_parked_p99_ms", "burst of {n}: RunTurn→approval_request p99", "ms"),
    ("park_cpu_ms", "server CPU per turn, RunTurn to parked", "ms"),
    ("new_accepted_p50_ms", "new turns at {new_rate:g}/s, {n} parked: →accepted p50", "ms"),
    ("new_accepted_p99_ms", "new turns at {new_rate:g}/s, {n} parked: →accepted p99", "ms"),
    ("new_cpu_ms", "server CPU per new turn (no park)", "ms"),
    ("decide_next_p50_ms", "mixed: Decide at {decide_rate:g}/s →next event p50", "ms"),
    ("decide_next_p99_ms", "mixed: Decide at {decide_rate:g}/s →next event p99", "ms"),
    ("mixed_accepted_p50_ms", "mixed: new turns at {new_rate:g}/s →accepted p50", "ms"),
    ("mixed_accepted_p99_ms", "mixed: new turns at {new_rate:g}/s →accepted p99", "ms"),
    ("resume_rate", "mixed: turns resumed to finished per second", "turns/s"),
    ("resume_cpu_ms", "server CPU per resume, Decide to finished", "ms"),
    ("resume_command_cpu_ms", "its echo command's CPU (children), per resume", "ms"),
    ("idle_cpu_ms_per_s", "idle server's CPU", "ms/s"),
    ("failed_turns", "turns that finished with an error", "turns"),
]
# Figures shown without the floor's: a ratio of them would mean nothing.
_NO_RATIO = {"idle_cpu_ms_per_s", "failed_turns"}


class _Server(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def grpc_target(self) -> str: ...


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--decide-rate", type=float, default=100.0, help="Decides per second (default 100)"
    )
    group.add_argument(
        "--new-rate",
        type=float,
        default=50.0,
        help="new turns per second while N are parked, and during the Decides (default 50)",
    )
    group.add_argument(
        "--new-turns",
        type=int,
        default=100,
        help="new turns of phase 2 (default 100, two seconds at 50/s)",
    )
    group.add_argument(
        "--no-floor", action="store_true", help="measure Blitz only (no ratios to the floor)"
    )


async def run(options: argparse.Namespace) -> Result:
    result = Result(
        NAME,
        params={
            "sizes": options.sizes,
            "channels": options.channels,
            "decide_rate": options.decide_rate,
            "new_rate": options.new_rate,
            "new_turns": options.new_turns,
            "floor": not options.no_floor,
        },
    )
    floors: dict[int, dict[str, Any]] = {}
    for size in sorted(set(options.sizes)):
        print(f"sessions: {size} sessions, Blitz", flush=True)
        row = await _one_size(blitz_server, size, options)
        if not options.no_floor:
            print(f"sessions: {size} sessions, the floor", flush=True)
            floors[size] = await _one_size(floor_server, size, options)
            row.update({f"floor_{key}": value for key, value in floors[size].items()})
        result.rows.append(row)
    row = result.rows[-1]
    floor = floors.get(row["size"], {})
    words = {"n": row["size"], "new_rate": options.new_rate, "decide_rate": options.decide_rate}
    for key, label, unit in _TABLE:
        base = math.nan if key in _NO_RATIO else floor.get(key, math.nan)
        result.add(key, label.format(**words), row[key], unit, base)
    return result


async def _one_size(
    start: Callable[[], AbstractAsyncContextManager[_Server]],
    size: int,
    options: argparse.Namespace,
) -> dict[str, Any]:
    mixed_count = math.ceil(options.new_rate * size / options.decide_rate)
    async with (
        start() as server,
        open_stubs(server.grpc_target, options.channels) as stubs,
    ):
        await warm_up(stubs)
        parked_ids = await create_sessions(stubs, size, title="parked")
        new_ids = await create_sessions(stubs, options.new_turns, title="new")
        mixed_ids = await create_sessions(stubs, mixed_count, title="mixed")
        idle_before = usage(server.pid)
        await asyncio.sleep(1.0)
        idle_cpu = (usage(server.pid) - idle_before).cpu

        def stub(i: int) -> Stub:
            return stubs[i % len(stubs)]

        # 1. The burst.
        turns = [TurnTimes(session_id) for session_id in parked_ids]
        before = usage(server.pid)
        burst_start = now()
        async with asyncio.TaskGroup() as group:
            parking = [
                group.create_task(run_to_park(stub(i), turn, f"$ echo parked-{i}"))
                for i, turn in enumerate(turns)
            ]
        calls: list[grpc.aio.UnaryStreamCall] = [task.result() for task in parking]
        burst_end = max(turn.parked for turn in turns)
        await asyncio.sleep(_SETTLE_S)
        after_burst = usage(server.pid)
        park_cpu = (after_burst - before).cpu

        # 2. New turns alone, while all of them are parked.
        new = [TurnTimes(session_id) for session_id in new_ids]
        before = usage(server.pid)
        async with asyncio.TaskGroup() as group:
            async for i in paced(len(new), options.new_rate):
                group.create_task(run_to_end(stub(i), new[i], f"hello {i}"))
        await asyncio.sleep(_SETTLE_S)
        new_cpu = (usage(server.pid) - before).cpu - idle_cpu * _SETTLE_S

        # 3. Mixed: resume them, Decide by Decide, each stream read as it goes on, while
        # new turns go on in other sessions.
        decide_calls: list[float] = []
        mixed = [TurnTimes(session_id) for session_id in mixed_ids]

        async def one_decide(i: int) -> None:
            decide_calls.append(await decide(stub(i), turns[i]))

        async def new_turns(group: asyncio.TaskGroup) -> None:
            async for i in paced(len(mixed), options.new_rate):
                group.create_task(run_to_end(stub(i + 1), mixed[i], f"hello {i}"))

        before = usage(server.pid)
        async with asyncio.TaskGroup() as group:
            # The readers are created first, so each waits on its stream before its Decide.
            for call, turn in zip(calls, turns, strict=True):
                group.create_task(read_to_end(call, turn, resuming=True))
            group.create_task(new_turns(group))
            async for i in paced(size, options.decide_rate):
                group.create_task(one_decide(i))
        await asyncio.sleep(_SETTLE_S)
        resumed = usage(server.pid) - before

    per_new = new_cpu / len(new)
    accepted = [turn.accepted - turn.sent for turn in turns]
    parked = [turn.parked - turn.sent for turn in turns]
    next_event = [turn.resumed - turn.decided for turn in turns]
    new_accepted = [turn.accepted - turn.sent for turn in new]
    new_finished = [turn.finished - turn.sent for turn in new]
    mixed_accepted = [turn.accepted - turn.sent for turn in mixed]
    return {
        "size": size,
        "burst_all_accepted_ms": ms(max(turn.accepted for turn in turns) - burst_start),
        "burst_all_parked_ms": ms(burst_end - burst_start),
        "burst_rate": size / (burst_end - burst_start),
        "burst_accepted_p50_ms": ms(percentile(accepted, 50)),
        "burst_accepted_p99_ms": ms(percentile(accepted, 99)),
        "burst_accepted_max_ms": ms(max(accepted)),
        "burst_parked_p50_ms": ms(percentile(parked, 50)),
        "burst_parked_p99_ms": ms(percentile(parked, 99)),
        "park_cpu_ms": ms(park_cpu) / size,
        "rss_parked_mb": after_burst.rss / 2**20,
        "new_accepted_p50_ms": ms(percentile(new_accepted, 50)),
        "new_accepted_p99_ms": ms(percentile(new_accepted, 99)),
        "new_finished_p50_ms": ms(percentile(new_finished, 50)),
        "new_finished_p99_ms": ms(percentile(new_finished, 99)),
        "new_cpu_ms": ms(per_new),
        "decide_next_p50_ms": ms(percentile(next_event, 50)),
        "decide_next_p99_ms": ms(percentile(next_event, 99)),
        "decide_call_p50_ms": ms(percentile(decide_calls, 50)),
        "decide_call_p99_ms": ms(percentile(decide_calls, 99)),
        "mixed_accepted_p50_ms": ms(percentile(mixed_accepted, 50)),
        "mixed_accepted_p99_ms": ms(percentile(mixed_accepted, 99)),
        "resume_rate": size / (max(turn.finished for turn in turns) - turns[0].decided),
        "resume_cpu_ms": ms(resumed.cpu - per_new * len(mixed)) / size,
        "resume_command_cpu_ms": ms(resumed.children_cpu) / size,
        "idle_cpu_ms_per_s": ms(idle_cpu),
        "failed_turns": sum(1 for turn in [*turns, *new, *mixed] if turn.error),
    }
