"""LangGraph's side of the `peer` scenario: `python -m bench.peer.drive SIZE OUT.json`, run
with the peer environment's python (bench/peer/venv.py), never with Blitz's.

It starts LangGraph's Agent Server as a team runs it on one machine, `langgraph dev`
(in-memory runtime, no reload, no browser, telemetry and tracing off, logs at warning as
Blitz's are), on a free port of 127.0.0.1 with the graph of `graph.py`, and drives it with
`langgraph-sdk` through the same phases as Blitz's side (bench/scenarios/peer.py):

1. warm-up: a few whole turns, each checked to end with the tool's output in the answer;
2. SIZE threads are made; the server's RSS read after a settle;
3. burst: SIZE runs `$ echo parked-I` streamed at once (`runs.stream`, `updates`; ten
   streams to each SDK client, see `_clients`), each until its `__interrupt__`: run→first
   event and run→interrupt per turn, threads parked per second, and the server's CPU from
   the burst's start to the last park, per turn;
4. the clients are closed, so no connection is left, and after a settle the RSS per parked
   thread is the growth since the threads were made, / SIZE;
5. resume: every thread resumed at once with `Command(resume="approve")` through new
   clients, each stream read to its end: resume→first event and →end per turn, resumed per
   second, and the server's CPU per resume (the `echo` commands' own apart, as Blitz's).

CPU is of the server's whole process tree (every live descendant), from /proc; the
commands it ran and reaped are counted apart, and this client's own CPU is in the row
too. The row goes to OUT.json, with the versions that ran. This module imports only the
peer's packages and the harness's stdlib-only modules (`bench.procfs`, `bench.stats`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import signal
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import uvloop
from langgraph_sdk.client import LangGraphClient

from bench.procfs import usage
from bench.stats import burst_and_resume, ms, now

HOST = "127.0.0.1"
GRAPH = "echo"
_GRAPH_FILE = Path(__file__).resolve().parent / "graph.py"
_START_TIMEOUT_S = 120.0
_SETTLE_S = 1.0
_CPU_SETTLE_S = 0.25
_SETUP_CONCURRENCY = 64
_STREAMS_PER_CLIENT = 10
_WARM_UP_TURNS = 5
_KB = 1024

# `langgraph dev` with nothing sent home: the CLI's analytics, the server's version check,
# LangSmith tracing. Without a license key its metadata loop does not run either.
_QUIET_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LOG_LEVEL": "WARNING",
    "LOG_COLOR": "false",
}
_KEYS = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
)

VERSIONS = (
    "langgraph-api",
    "langgraph-runtime-inmem",
    "langgraph",
    "langgraph-cli",
    "langgraph-sdk",
)


@dataclass(frozen=True)
class PeerServer:
    pid: int
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


@dataclass
class Turn:
    """One thread's turn as the client saw it: `perf_counter()` times, NaN if not reached."""

    thread_id: str
    sent: float = math.nan
    accepted: float = math.nan
    """The run's first event (`metadata`)."""
    parked: float = math.nan
    """The `__interrupt__` update."""
    decided: float = math.nan
    resumed: float = math.nan
    """The resumed run's first event."""
    finished: float = math.nan
    answered: bool = False
    """The final answer carried the command's output."""
    error: str = ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _descendants(pid: int) -> list[int]:
    """`pid` and every live process under it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the server's live process tree, and of the children it reaped."""
    total = 0.0
    for each in _descendants(pid):
        try:
            total += usage(each).cpu
        except (OSError, KeyError):
            continue
    return total, usage(pid).children_cpu


def tree_rss(pid: int) -> int:
    total = 0
    for each in _descendants(pid):
        try:
            total += usage(each).rss
        except (OSError, KeyError):
            continue
    return total


async def _settled_rss(pid: int) -> int:
    await asyncio.sleep(_SETTLE_S)
    return tree_rss(pid)


async def _answers(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2) as http:
            return (await http.get(f"{url}/ok")).status_code == 200
    except httpx.HTTPError:
        return False


@asynccontextmanager
async def peer_server(folder: Path, *, jobs: int) -> AsyncIterator[PeerServer]:
    """`langgraph dev` on a free port, its config and persistence in `folder`, until exit."""
    port = _free_port()
    config = folder / "langgraph.json"
    config.write_text(
        json.dumps({"dependencies": ["."], "graphs": {GRAPH: f"{_GRAPH_FILE}:graph"}})
    )
    command = [
        str(Path(sys.executable).parent / "langgraph"),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        HOST,
        "--port",
        str(port),
        "--config",
        str(config),
        "--n-jobs-per-worker",
        str(jobs),
        "--server-log-level",
        "warning",
    ]
    env = {k: v for k, v in os.environ.items() if k not in _KEYS} | _QUIET_ENV
    log = folder / "server.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=folder, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out
        )
        try:
            server = PeerServer(proc.pid, port, log)
            end = time.monotonic() + _START_TIMEOUT_S
            while not await _answers(server.url):
                if proc.returncode is not None or time.monotonic() > end:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"langgraph dev did not start; its log ends:\n{tail}")
                await asyncio.sleep(0.05)
            yield server
        finally:
            if proc.returncode is None:
                proc.terminate()
                try:
                    async with asyncio.timeout(30):
                        await proc.wait()
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


@asynccontextmanager
async def _clients(url: str, streams: int) -> AsyncIterator[list[LangGraphClient]]:
    """SDK clients for `streams` runs streamed at once, `_STREAMS_PER_CLIENT` to each.

    Each streamed run holds a connection of its own (HTTP/1.1), and httpcore's pool walks
    all of its connections for every request and response: one client for a thousand
    streams spent 24 ms of its CPU per turn doing so, more than the server, on the same
    two cores. Small pools keep the client's cost what it would be for many clients.
    """
    count = max(1, math.ceil(streams / _STREAMS_PER_CLIENT))
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(count):
            http = httpx.AsyncClient(
                base_url=url,
                headers={"User-Agent": "blitz-bench"},
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
                timeout=httpx.Timeout(600, connect=60, pool=None),
                verify=False,  # plain HTTP on 127.0.0.1: no CA bundle loaded per client
            )
            clients.append(await stack.enter_async_context(LangGraphClient(http)))
        yield clients


async def _make_threads(client: LangGraphClient, count: int) -> list[str]:
    gate = asyncio.Semaphore(_SETUP_CONCURRENCY)

    async def one() -> str:
        async with gate:
            thread = await client.threads.create()
            return str(thread["thread_id"])

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def run_to_park(client: LangGraphClient, turn: Turn, text: str) -> None:
    turn.sent = now()
    user = {"role": "user", "content": text}
    async for part in client.runs.stream(
        turn.thread_id, GRAPH, input={"messages": [user]}, stream_mode="updates"
    ):
        if math.isnan(turn.accepted):
            turn.accepted = now()
        if part.event == "updates" and "__interrupt__" in part.data:
            turn.parked = now()
        elif part.event == "error":
            turn.error = str(part.data)


async def resume(client: LangGraphClient, turn: Turn, expected: str) -> None:
    turn.decided = now()
    async for part in client.runs.stream(
        turn.thread_id, GRAPH, command={"resume": "approve"}, stream_mode="updates"
    ):
        if math.isnan(turn.resumed):
            turn.resumed = now()
        if part.event == "updates" and "agent" in part.data:
            messages = part.data["agent"].get("messages", [])
            turn.answered = any(expected in str(m.get("content", "")) for m in messages)
        elif part.event == "error":
            turn.error = str(part.data)
    turn.finished = now()


async def _warm_up(client: LangGraphClient) -> None:
    for i, thread_id in enumerate(await _make_threads(client, _WARM_UP_TURNS)):
        turn = Turn(thread_id)
        await run_to_park(client, turn, f"$ echo warm-{i}")
        await resume(client, turn, f"warm-{i}")
        if math.isnan(turn.parked) or not turn.answered:
            raise RuntimeError(f"the warm-up turn did not park and answer: {turn}")


async def measure(size: int, *, jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="blitz-bench-peer-") as tmp:
        async with peer_server(Path(tmp), jobs=jobs) as server:
            return await _phases(server, size)


async def _phases(server: PeerServer, size: int) -> dict[str, Any]:
    pid = server.pid
    async with _clients(server.url, 1) as (client,):
        await _warm_up(client)
        empty = await _settled_rss(pid)
        thread_ids = await _make_threads(client, size)
    with_threads = await _settled_rss(pid)
    idle_before = tree_cpu(pid)[0]
    await asyncio.sleep(1.0)
    idle_cpu = tree_cpu(pid)[0] - idle_before

    # The burst: every turn at once, each to its interrupt.
    turns = [Turn(thread_id) for thread_id in thread_ids]
    async with _clients(server.url, size) as clients:
        before, client_before = tree_cpu(pid)[0], usage(os.getpid()).cpu
        start = now()
        await asyncio.gather(
            *(
                run_to_park(clients[i % len(clients)], turn, f"$ echo parked-{i}")
                for i, turn in enumerate(turns)
            )
        )
        last_park = max(turn.parked for turn in turns)
        await asyncio.sleep(_CPU_SETTLE_S)
        park_cpu = tree_cpu(pid)[0] - before
        client_park_cpu = usage(os.getpid()).cpu - client_before
    parked_rss = await _settled_rss(pid)  # no client, no connection left

    # Resume every one at once.
    async with _clients(server.url, size) as clients:
        before_cpu, before_children = tree_cpu(pid)
        client_before = usage(os.getpid()).cpu
        first = now()
        await asyncio.gather(
            *(
                resume(clients[i % len(clients)], turn, f"parked-{i}")
                for i, turn in enumerate(turns)
            )
        )
        last = max(turn.finished for turn in turns)
        await asyncio.sleep(_CPU_SETTLE_S)
        after_cpu, after_children = tree_cpu(pid)
        client_resume_cpu = usage(os.getpid()).cpu - client_before

    return {
        "size": size,
        **burst_and_resume(turns, start=start, last_park=last_park, first=first, last=last),
        "park_cpu_ms": ms(park_cpu) / size,
        "session_kb": (with_threads - empty) / size / _KB,
        "parked_kb": (parked_rss - with_threads) / size / _KB,
        "rss_parked_mb": parked_rss / 2**20,
        "resume_cpu_ms": ms(after_cpu - before_cpu) / size,
        "resume_command_cpu_ms": ms(after_children - before_children) / size,
        "idle_cpu_ms_per_s": ms(idle_cpu),
        # The measuring client's own CPU: on two cores, a busy client takes the server's.
        "client_park_cpu_ms": ms(client_park_cpu) / size,
        "client_resume_cpu_ms": ms(client_resume_cpu) / size,
        "failed_turns": sum(1 for t in turns if t.error or math.isnan(t.parked) or not t.answered),
    }


def versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in VERSIONS}


async def _main(size: int, jobs: int) -> dict[str, Any]:
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await measure(size, jobs=jobs)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peer.drive", description=__doc__)
    parser.add_argument("size", type=int, help="threads parked at once")
    parser.add_argument("out", type=Path, help="where the row goes, as JSON")
    parser.add_argument(
        "--jobs", type=int, default=10, help="the server's --n-jobs-per-worker (default 10)"
    )
    args = parser.parse_args()
    # One connection per streamed run, at the client and at the server (which inherits it).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        row = uvloop.run(_main(args.size, args.jobs))
    except asyncio.CancelledError:
        sys.exit("peer: stopped; its server was stopped too")
    args.out.write_text(json.dumps({"row": row, "versions": versions(), "jobs": args.jobs}))


if __name__ == "__main__":
    main()
