"""Streaming throughput: a `stream: N` turn through Blitz beside a bare server of each stack.

For each transport, the client (in this process, on uvloop) counts model deltas delivered
per second: through Blitz, each `chunk K ` the demo model streamed, however the server
coalesced them into events; through the bare server, each of N pre-built events. Servers
run in their own processes. Rounds alternate Blitz and bare so machine noise hits both.

    .venv/bin/python bench/stream_throughput.py [--chunks 20000] [--rounds 5]
        [--client-loop uvloop|asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import uvloop

from blitz.v1 import session_connect, session_pb2_grpc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def deltas_in(event: t.TurnEvent) -> int:
    if event.HasField("text") and event.text.partial and not event.text.thought:
        return event.text.text.count("chunk ")
    return 0


async def timed(events: AsyncIterator[t.TurnEvent]) -> tuple[int, int, float]:
    """(deltas, events, seconds) from the first event to the end of the stream."""
    deltas = count = 0
    start = 0.0
    async for event in events:
        if not count:
            start = time.perf_counter()
        count += 1
        deltas += deltas_in(event)
    return deltas, count, time.perf_counter() - start


async def grpc_round(target: str, *, blitz: bool, chunks: int) -> tuple[int, int, float]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = session_pb2_grpc.SessionServiceStub(channel)
        if not blitz:
            return await timed(stub.Watch(s.WatchRequest()))
        session = await stub.CreateSession(s.CreateSessionRequest(title="bench"))
        turn = t.Turn(text=f"stream: {chunks}")
        return await timed(stub.RunTurn(s.RunTurnRequest(session_id=session.id, turn=turn)))


async def connect_round(url: str, *, blitz: bool, chunks: int) -> tuple[int, int, float]:
    async with session_connect.SessionServiceClient(url) as client:
        if not blitz:
            result = await timed(client.watch(s.WatchRequest()))
        else:
            session = await client.create_session(s.CreateSessionRequest(title="bench"))
            turn = t.Turn(text=f"stream: {chunks}")
            request = s.RunTurnRequest(session_id=session.id, turn=turn)
            result = await timed(client.run_turn(request))
    await asyncio.sleep(0.05)  # pyqwest's threads let go of the connection (see blitz_client)
    return result


def start(cmd: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_port(port)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--client-loop",
        choices=["uvloop", "asyncio"],
        default="uvloop",
        help="event loop of the measuring client (servers always run on uvloop)",
    )
    args = parser.parse_args()

    go = uvloop.run if args.client_loop == "uvloop" else asyncio.run
    grpc_bare, connect_bare, blitz_grpc, blitz_http = (free_port() for _ in range(4))
    procs = []
    with tempfile.TemporaryDirectory() as data:
        try:
            for kind, port in (("grpc", grpc_bare), ("connect", connect_bare)):
                bare_server = [sys.executable, str(HERE / "bare_server.py"), kind, str(port)]
                procs.append(start([*bare_server, str(args.chunks)], port))
            env = {**os.environ, "BLITZ_LOG_LEVEL": "warning"}
            procs.append(
                start(
                    [
                        sys.executable,
                        "-m",
                        "blitz.cli",
                        "serve",
                        "--grpc-port",
                        str(blitz_grpc),
                        "--http-port",
                        str(blitz_http),
                        "--data-dir",
                        data,
                    ],
                    blitz_http,
                    env,
                )
            )
            wait_port(blitz_grpc)
            cases: list[tuple[str, Callable[..., object]]] = [
                (
                    "grpc",
                    lambda blitz: grpc_round(
                        f"127.0.0.1:{blitz_grpc if blitz else grpc_bare}",
                        blitz=blitz,
                        chunks=args.chunks,
                    ),
                ),
                (
                    "connect",
                    lambda blitz: connect_round(
                        f"http://127.0.0.1:{blitz_http if blitz else connect_bare}",
                        blitz=blitz,
                        chunks=args.chunks,
                    ),
                ),
            ]
            print(
                f"chunks per stream: {args.chunks}, rounds: {args.rounds} (median shown),"
                f" client loop: {args.client_loop}"
            )
            header = ("transport", "bare deltas/s", "blitz deltas/s", "ratio", "blitz events")
            print("{:<10}{:>15}{:>16}{:>8}{:>14}".format(*header))
            for name, run in cases:
                bare_rates, blitz_rates, blitz_events = [], [], []
                go(run(False))  # warm up both servers
                go(run(True))
                for _ in range(args.rounds):
                    deltas, _, secs = go(run(False))
                    bare_rates.append(deltas / secs)
                    deltas, count, secs = go(run(True))
                    assert deltas == args.chunks, f"lost deltas: {deltas} of {args.chunks}"
                    blitz_rates.append(deltas / secs)
                    blitz_events.append(count)
                bare, ours = statistics.median(bare_rates), statistics.median(blitz_rates)
                events = statistics.median(blitz_events)
                print(f"{name:<10}{bare:>15,.0f}{ours:>16,.0f}{ours / bare:>8.2f}{events:>14,.0f}")
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=15)


if __name__ == "__main__":
    main()
