"""`parked`: the server's memory per parked turn, with its stream open and with none.

For each count N, three fresh servers, each warmed up and then read for VmRSS after a
settle:

- `open`: Blitz; N sessions are created (RSS per session), then N turns `$ echo parked-I`
  park, `--wave` of them starting at a time, and every RunTurn stream stays open, unread
  past the `approval_request`. RSS per parked turn = the growth since the sessions, / N.
- `none`: the same, but each stream is closed as soon as its turn parks, so no client is
  attached to any of them when RSS is read. Waves keep the streams' own memory to a
  wave's worth, whatever N, since the allocator rarely gives freed memory back. That
  wave's worth (the turns in flight at once, their stacks and streams) is paid once, so
  a second N is parked after the first, and the growth it brings is shown too
  (`none_more_kb`): what a parked turn costs past the first N.
- `floor`: the floor server (bench/floor_server.py), as `open`: the least a server of
  this stack keeps per parked turn (its RunTurn coroutine, waiting), the target's base.
- `bare`: the bare grpc.aio server; N `Watch(follow)` streams that each get one event and
  then stay open, idle. RSS per open stream: what the transport alone costs.

RSS is resident memory of the whole process, so figures are growth over a baseline, per
item: what a thousand more of them would cost, allocator slack included.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc

from bench.calls import Stub, TurnTimes, create_sessions, open_stubs, run_to_park, warm_up
from bench.options import sizes
from bench.procfs import usage
from bench.results import Result
from bench.servers import bare_server, blitz_server, floor_server
from blitz.v1 import session_pb2 as s

__all__ = ["NAME", "add_arguments", "run"]

NAME = "parked"

_SETTLE_S = 1.0
_KB = 1024

_TABLE = [
    ("open_kb", "RSS per parked turn, its stream open ({n} parked)", "KB"),
    ("floor_kb", "the floor: RSS per parked turn, its stream open ({n} parked)", "KB"),
    ("none_kb", "RSS per parked turn, no client attached ({n} parked)", "KB"),
    ("none_more_kb", "RSS per parked turn, no client attached, {n} more parked", "KB"),
    ("bare_kb", "bare grpc.aio: RSS per idle open stream ({n} open)", "KB"),
    ("session_kb", "RSS per idle session, before its turn", "KB"),
    ("open_rss_mb", "server RSS with {n} parked, streams open", "MB"),
]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--parked-counts",
        type=sizes,
        default=None,
        help="numbers of parked turns, e.g. 1000,3000,10000 (default: --sizes)",
    )
    group.add_argument(
        "--wave",
        type=int,
        default=100,
        help="turns or streams started at a time while parking (default 100)",
    )


async def run(options: argparse.Namespace) -> Result:
    counts = sorted(set(options.parked_counts or options.sizes))
    result = Result(
        NAME, params={"counts": counts, "wave": options.wave, "channels": options.channels}
    )
    for count in counts:
        print(f"parked: {count} turns", flush=True)
        row: dict[str, Any] = {"count": count}
        row.update(await _parked(blitz_server, "open", count, options, keep_open=True))
        row.update(await _parked(blitz_server, "none", count, options, keep_open=False))
        row.update(await _parked(floor_server, "floor", count, options, keep_open=True))
        row.update(await _bare(count, options))
        result.rows.append(row)
    row = result.rows[-1]
    for key, label, unit in _TABLE:
        floor = row["floor_kb"] if key == "open_kb" else math.nan
        result.add(key, label.format(n=row["count"]), row[key], unit, floor)
    return result


async def _parked(
    start: Callable[[], AbstractAsyncContextManager[Any]],
    mode: str,
    count: int,
    options: argparse.Namespace,
    *,
    keep_open: bool,
) -> dict[str, float]:
    async with (
        start() as server,
        open_stubs(server.grpc_target, options.channels) as stubs,
    ):
        await warm_up(stubs)
        empty = await _settled_rss(server.pid)
        # With no client, a second N after the first: all their sessions made first.
        more = 0 if keep_open else count
        session_ids = await create_sessions(stubs, count + more, title="parked")
        with_sessions = await _settled_rss(server.pid)
        gate = asyncio.Semaphore(options.wave)

        async def park(i: int, session_id: str) -> grpc.aio.UnaryStreamCall:
            async with gate:
                call = await run_to_park(
                    stubs[i % len(stubs)], TurnTimes(session_id), f"$ echo parked-{i}"
                )
            if not keep_open:
                call.cancel()
            return call

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(park(i, sid)) for i, sid in enumerate(session_ids[:count])]
        parked = await _settled_rss(server.pid)
        if more:
            async with asyncio.TaskGroup() as group:
                tasks += [
                    group.create_task(park(count + i, sid))
                    for i, sid in enumerate(session_ids[count:])
                ]
            more_kb = (await _settled_rss(server.pid) - parked) / more / _KB
        for task in tasks:
            task.result().cancel()
    row = {f"{mode}_kb": (parked - with_sessions) / count / _KB, f"{mode}_rss_mb": parked / 2**20}
    if more:
        row[f"{mode}_more_kb"] = more_kb
    if mode == "open":
        row["session_kb"] = (with_sessions - empty) / count / _KB
    return row


async def _bare(count: int, options: argparse.Namespace) -> dict[str, float]:
    async with (
        bare_server("grpc") as server,
        open_stubs(server.grpc_target, options.channels) as stubs,
    ):
        gate = asyncio.Semaphore(options.wave)

        async def hold(i: int) -> grpc.aio.UnaryStreamCall:
            async with gate:
                call = _idle_watch(stubs[i % len(stubs)])
                await call.read()  # its one event: the stream is open at the server
            return call

        (await hold(0)).cancel()  # warm-up
        empty = await _settled_rss(server.pid)
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(hold(i)) for i in range(count)]
        held = await _settled_rss(server.pid)
        for task in tasks:
            task.result().cancel()
    return {"bare_kb": (held - empty) / count / _KB, "bare_rss_mb": held / 2**20}


def _idle_watch(stub: Stub) -> grpc.aio.UnaryStreamCall:
    return stub.Watch(s.WatchRequest(after_seq=1, follow=True))


async def _settled_rss(pid: int) -> int:
    await asyncio.sleep(_SETTLE_S)
    return usage(pid).rss
