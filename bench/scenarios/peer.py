"""`peer`: Blitz beside LangGraph's Agent Server, the peer a team would otherwise run, on the
same `$ echo` turns that park on an approval and are resumed.

For each size N, a fresh server of each kind, measured from outside through the same
phases, one after the other (never at once):

- Blitz: `blitz serve` (bench/servers.py), over grpcio (`--channels` connections), as in
  `sessions`: N sessions each send `$ echo parked-I` at once and park on its approval;
  then every one is approved at once (Decide, ONCE) and read to `finished`.
- LangGraph: `langgraph dev` (langgraph-api, in-memory runtime) in a virtual environment
  of its own (bench/peer/venv.py, pinned in bench/peer/requirements.txt, made on the first
  run), running bench/peer/graph.py: a deterministic chat model answers `$ echo parked-I`
  with one tool call; the tool node's tool asks with `interrupt()`, and is resumed with
  `Command(resume="approve")`, runs the command, and the model answers. It is driven by
  `langgraph-sdk` from a process in that environment (bench/peer/drive.py): N threads,
  each streamed one run to its interrupt, all at once; then all resumed at once.

Per side: run→first event and →parked (`approval_request`, `__interrupt__`) p50 and
p99 in the burst, turns parked per second, the server's CPU per park; RSS per parked turn
(growth since the sessions or threads were made, / N; Blitz's with each turn's stream
open, LangGraph's with no connection at all, as its run has ended); then resume→first
event and →finished, resumed per second, and the server's CPU per resume with the `echo`
commands' own apart. The measuring client's own CPU is reported too (grpcio's for Blitz,
httpx's for LangGraph): on two cores it takes what the server would have. The figure
table puts LangGraph's value where the floor's goes, so its ratio is Blitz ÷ LangGraph,
and the targets (bench/targets.py) bound that ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import grpc

from bench.calls import (
    Stub,
    TurnTimes,
    create_sessions,
    decide,
    open_stubs,
    read_to_end,
    run_to_park,
    warm_up,
)
from bench.options import sizes
from bench.peer.venv import ensure_peer_venv
from bench.procfs import usage
from bench.results import Result
from bench.servers import ROOT, blitz_server
from bench.stats import burst_and_resume, ms, now

__all__ = ["NAME", "add_arguments", "run"]

NAME = "peer"

_SETTLE_S = 1.0
_CPU_SETTLE_S = 0.25
_KB = 1024

# The figures of the table, from the largest size: key in both rows, label, unit.
_TABLE = [
    ("park_cpu_ms", "vs LangGraph: server CPU per turn, run to parked", "ms"),
    ("resume_cpu_ms", "vs LangGraph: server CPU per resume, to finished", "ms"),
    ("burst_accepted_p50_ms", "vs LangGraph: burst of {n}, run→first event p50", "ms"),
    ("burst_accepted_p99_ms", "vs LangGraph: burst of {n}, run→first event p99", "ms"),
    ("burst_parked_p50_ms", "vs LangGraph: burst of {n}, run→parked p50", "ms"),
    ("burst_parked_p99_ms", "vs LangGraph: burst of {n}, run→parked p99", "ms"),
    ("resume_next_p50_ms", "vs LangGraph: {n} resumed at once, →first event p50", "ms"),
    ("resume_next_p99_ms", "vs LangGraph: {n} resumed at once, →first event p99", "ms"),
    ("resume_finished_p50_ms", "vs LangGraph: {n} resumed at once, →finished p50", "ms"),
    ("resume_finished_p99_ms", "vs LangGraph: {n} resumed at once, →finished p99", "ms"),
    ("burst_rate", "vs LangGraph: burst of {n}, turns parked per second", "turns/s"),
    ("resume_rate", "vs LangGraph: turns resumed to finished per second", "turns/s"),
    ("parked_kb", "vs LangGraph: RSS per parked turn ({n} parked)", "KB"),
    ("session_kb", "vs LangGraph: RSS per idle session or thread", "KB"),
    ("resume_command_cpu_ms", "vs LangGraph: the echo command's CPU per resume", "ms"),
    ("client_park_cpu_ms", "vs LangGraph: the measuring client's CPU per park", "ms"),
    ("client_resume_cpu_ms", "vs LangGraph: the measuring client's CPU per resume", "ms"),
    ("idle_cpu_ms_per_s", "Blitz idle server's CPU (LangGraph's in the JSON rows)", "ms/s"),
    ("failed_turns", "Blitz turns that did not park or finish", "turns"),
]
# Figures shown without LangGraph's: a ratio of them would mean nothing.
_NO_RATIO = {"idle_cpu_ms_per_s", "failed_turns"}


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--peer-sizes",
        type=sizes,
        default=None,
        help="turns parked at once on each server, e.g. 100,1000 (default: --sizes)",
    )
    group.add_argument(
        "--peer-jobs",
        type=int,
        default=10,
        help="LangGraph's --n-jobs-per-worker, runs it executes at once (default 10, its"
        " documented default; `langgraph dev` alone runs 1)",
    )


async def run(options: argparse.Namespace) -> Result:
    counts = sorted(set(options.peer_sizes or options.sizes))
    python = await asyncio.to_thread(ensure_peer_venv)
    result = Result(
        NAME,
        params={"sizes": counts, "channels": options.channels, "langgraph_jobs": options.peer_jobs},
    )
    for size in counts:
        print(f"peer: {size} turns, Blitz", flush=True)
        row = await _blitz(size, options)
        print(f"peer: {size} turns, LangGraph", flush=True)
        peer = await _langgraph(python, size, jobs=options.peer_jobs)
        result.params["langgraph_versions"] = peer["versions"]
        row.update({f"langgraph_{key}": value for key, value in peer["row"].items()})
        result.rows.append(row)
    row = result.rows[-1]
    for key, label, unit in _TABLE:
        base = math.nan if key in _NO_RATIO else row[f"langgraph_{key}"]
        result.add(key, label.format(n=row["size"]), row[key], unit, base)
    result.add(
        "langgraph_failed_turns",
        "LangGraph turns that did not park or answer",
        row["langgraph_failed_turns"],
        "turns",
    )
    return result


async def _blitz(size: int, options: argparse.Namespace) -> dict[str, Any]:
    async with (
        blitz_server() as server,
        open_stubs(server.grpc_target, options.channels) as stubs,
    ):
        pid = server.pid
        await warm_up(stubs)
        empty = await _settled_rss(pid)
        session_ids = await create_sessions(stubs, size, title="peer")
        with_sessions = await _settled_rss(pid)
        idle_before = usage(pid)
        await asyncio.sleep(1.0)
        idle_cpu = (usage(pid) - idle_before).cpu

        def stub(i: int) -> Stub:
            return stubs[i % len(stubs)]

        # The burst: every turn at once, each to its approval_request; streams stay open.
        turns = [TurnTimes(session_id) for session_id in session_ids]
        before, client_before = usage(pid), usage(os.getpid())
        start = now()
        async with asyncio.TaskGroup() as group:
            parking = [
                group.create_task(run_to_park(stub(i), turn, f"$ echo parked-{i}"))
                for i, turn in enumerate(turns)
            ]
        calls: list[grpc.aio.UnaryStreamCall] = [task.result() for task in parking]
        last_park = max(turn.parked for turn in turns)
        await asyncio.sleep(_CPU_SETTLE_S)
        park_cpu = (usage(pid) - before).cpu
        client_park_cpu = (usage(os.getpid()) - client_before).cpu
        parked_rss = await _settled_rss(pid)

        # Resume every one at once, each stream read to `finished`.
        before, client_before = usage(pid), usage(os.getpid())
        first = now()
        async with asyncio.TaskGroup() as group:
            # The readers first, so that each waits on its stream before its Decide.
            for call, turn in zip(calls, turns, strict=True):
                group.create_task(read_to_end(call, turn, resuming=True))
            for i, turn in enumerate(turns):
                group.create_task(decide(stub(i), turn))
        last = max(turn.finished for turn in turns)
        await asyncio.sleep(_CPU_SETTLE_S)
        resumed = usage(pid) - before
        client_resume_cpu = (usage(os.getpid()) - client_before).cpu

    return {
        "size": size,
        **burst_and_resume(turns, start=start, last_park=last_park, first=first, last=last),
        "park_cpu_ms": ms(park_cpu) / size,
        "session_kb": (with_sessions - empty) / size / _KB,
        "parked_kb": (parked_rss - with_sessions) / size / _KB,
        "rss_parked_mb": parked_rss / 2**20,
        "resume_cpu_ms": ms(resumed.cpu) / size,
        "resume_command_cpu_ms": ms(resumed.children_cpu) / size,
        "idle_cpu_ms_per_s": ms(idle_cpu),
        # The measuring client's own CPU: on two cores, a busy client takes the server's.
        "client_park_cpu_ms": ms(client_park_cpu) / size,
        "client_resume_cpu_ms": ms(client_resume_cpu) / size,
        "failed_turns": sum(
            1 for t in turns if t.error or math.isnan(t.parked) or math.isnan(t.finished)
        ),
    }


async def _langgraph(python: Path, size: int, *, jobs: int) -> dict[str, Any]:
    """One size on LangGraph: the driver in the peer's environment, its row back as JSON."""
    with tempfile.TemporaryDirectory(prefix="blitz-bench-peer-") as tmp:
        out = Path(tmp) / "row.json"
        command = [str(python), "-m", "bench.peer.drive", str(size), str(out), "--jobs", str(jobs)]
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL
        )
        try:
            code = await proc.wait()
        finally:
            if proc.returncode is None:  # cancelled: it stops its server on SIGTERM
                proc.terminate()
                await asyncio.shield(proc.wait())
        if code != 0:
            raise RuntimeError(f"the LangGraph driver failed (exit {code})")
        peer: dict[str, Any] = json.loads(out.read_text())
        return peer


async def _settled_rss(pid: int) -> int:
    await asyncio.sleep(_SETTLE_S)
    return usage(pid).rss
