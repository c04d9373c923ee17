"""`streams`: streaming throughput, Blitz beside a bare server of each stack.

Cases: one `stream: 20000` turn, and 50 concurrent `stream: 2000` turns (one session
each), over gRPC and over Connect. Beside each, the bare server of that stack
(`bare_server.py`) streams as many pre-built events from memory, through as many
concurrent `Watch` calls. Rounds alternate bare and Blitz, after a warm-up round of each
on each transport, so that machine noise hits both; figures are medians over rounds.

- deltas/s at the client, all streams together: model deltas (each `chunk K` the demo
  model streamed, however the server merged them into events) from the first event of
  any stream to the end of the last. For the bare server, events/s: one delta each.
- server CPU per delta: the server process's whole CPU over the round (calls, streaming,
  persisting) over the deltas delivered, in µs; the bare server's per event.
- ratio: Blitz's deltas/s over the bare server's.
- lost deltas: every turn must deliver all of its chunks; any shortfall is counted.

The client is one process on uvloop, reading every stream; a bare server is usually
bound by that client, Blitz by its own CPU (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from bench.calls import deltas_in
from bench.procfs import usage
from bench.results import Result
from bench.servers import bare_server, blitz_server, grpc_options
from bench.stats import now
from blitz.v1 import session_connect, session_pb2_grpc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["NAME", "add_arguments", "run"]

NAME = "streams"

_TRANSPORTS = ("grpc", "connect")
_SPELLED = {"grpc": "gRPC", "connect": "Connect"}
# Chunks of the one warm-up round of each server on each transport.
_WARMUP = 2_000

# The figures of the table, for each transport and case: key in the row, label, unit.
_FIGURES = [
    ("blitz_deltas_per_s", "Blitz deltas/s", "/s"),
    ("bare_events_per_s", "bare events/s", "/s"),
    ("ratio", "Blitz / bare", "×"),
    ("blitz_cpu_us_per_delta", "Blitz server CPU per delta", "µs"),
    ("bare_cpu_us_per_event", "bare server CPU per event", "µs"),
    ("blitz_events_per_turn", "Blitz events per turn", "events"),
    ("lost_deltas", "deltas lost", "deltas"),
]


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--one-stream-chunks",
        type=int,
        default=20_000,
        help="chunks of the single-stream case (default 20000)",
    )
    group.add_argument(
        "--many-streams", type=int, default=50, help="concurrent streams of the other (default 50)"
    )
    group.add_argument(
        "--many-stream-chunks",
        type=int,
        default=2_000,
        help="chunks of each of those (default 2000)",
    )
    group.add_argument("--rounds", type=int, default=3, help="measured rounds per case (default 3)")
    group.add_argument(
        "--transports",
        type=lambda text: [part for part in text.split(",") if part],
        default=list(_TRANSPORTS),
        help="grpc, connect or both (default grpc,connect)",
    )


class _Client(Protocol):
    async def create_session(self) -> str: ...
    def run_turn(self, session_id: str, text: str) -> AsyncIterator[t.TurnEvent]: ...
    def watch(self, count: int) -> AsyncIterator[t.TurnEvent]: ...


class _GrpcClient:
    def __init__(self, stub: session_pb2_grpc.SessionServiceStub) -> None:
        self._stub = stub

    async def create_session(self) -> str:
        return str((await self._stub.CreateSession(s.CreateSessionRequest(title="bench"))).id)

    def run_turn(self, session_id: str, text: str) -> AsyncIterator[t.TurnEvent]:
        request = s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=text))
        events: AsyncIterator[t.TurnEvent] = self._stub.RunTurn(request)
        return events

    def watch(self, count: int) -> AsyncIterator[t.TurnEvent]:
        events: AsyncIterator[t.TurnEvent] = self._stub.Watch(s.WatchRequest(after_seq=count))
        return events


class _ConnectClient:
    def __init__(self, client: session_connect.SessionServiceClient) -> None:
        self._client = client

    async def create_session(self) -> str:
        session = await self._client.create_session(s.CreateSessionRequest(title="bench"))
        return str(session.id)

    def run_turn(self, session_id: str, text: str) -> AsyncIterator[t.TurnEvent]:
        request = s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=text))
        return self._client.run_turn(request)

    def watch(self, count: int) -> AsyncIterator[t.TurnEvent]:
        return self._client.watch(s.WatchRequest(after_seq=count))


@asynccontextmanager
async def _client(transport: str, address: str) -> AsyncIterator[_Client]:
    """A fresh client per round, as a separate program would have."""
    if transport == "grpc":
        async with grpc.aio.insecure_channel(address, options=grpc_options()) as channel:
            yield _GrpcClient(session_pb2_grpc.SessionServiceStub(channel))
    else:
        async with session_connect.SessionServiceClient(address) as client:
            yield _ConnectClient(client)
        await asyncio.sleep(0.05)  # pyqwest's threads let go of the connection (see blitz_client)


@dataclass
class _Stream:
    deltas: int
    events: int
    first: float
    end: float


async def _timed(events: AsyncIterator[t.TurnEvent]) -> _Stream:
    deltas = count = 0
    first = math.nan
    async for event in events:
        if not count:
            first = now()
        count += 1
        deltas += deltas_in(event)
    return _Stream(deltas, count, first, now())


@dataclass
class _Round:
    rate: float
    cpu_per_delta: float
    events_per_stream: float
    lost: int


@dataclass(frozen=True)
class _Server:
    address: str
    pid: int
    blitz: bool


async def _round(transport: str, server: _Server, *, streams: int, chunks: int) -> _Round:
    blitz = server.blitz
    async with _client(transport, server.address) as client:
        session_ids = [await client.create_session() for _ in range(streams)] if blitz else []
        before = usage(server.pid)
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(
                    _timed(
                        client.run_turn(session_ids[i], f"stream: {chunks}")
                        if blitz
                        else client.watch(chunks)
                    )
                )
                for i in range(streams)
            ]
        spent = usage(server.pid) - before
    done = [task.result() for task in tasks]
    deltas = sum(stream.deltas for stream in done)
    elapsed = max(stream.end for stream in done) - min(stream.first for stream in done)
    return _Round(
        rate=deltas / elapsed,
        cpu_per_delta=spent.cpu / deltas * 1e6 if deltas else math.nan,
        events_per_stream=statistics.mean(stream.events for stream in done),
        lost=streams * chunks - deltas,
    )


async def run(options: argparse.Namespace) -> Result:
    cases = [(1, options.one_stream_chunks), (options.many_streams, options.many_stream_chunks)]
    result = Result(
        NAME,
        params={"cases": cases, "rounds": options.rounds, "transports": options.transports},
    )
    async with (
        blitz_server() as blitz,
        bare_server("grpc") as bare_grpc,
        bare_server("connect") as bare_connect,
    ):
        servers = {
            "grpc": (
                _Server(blitz.grpc_target, blitz.pid, blitz=True),
                _Server(bare_grpc.grpc_target, bare_grpc.pid, blitz=False),
            ),
            "connect": (
                _Server(blitz.http_url, blitz.pid, blitz=True),
                _Server(bare_connect.http_url, bare_connect.pid, blitz=False),
            ),
        }
        for transport in options.transports:
            ours, bare = servers[transport]
            # Warm both servers up on this transport: first calls, pre-built events.
            await _round(transport, bare, streams=1, chunks=_WARMUP)
            await _round(transport, ours, streams=1, chunks=_WARMUP)
            for streams, chunks in cases:
                print(f"streams: {transport}, {streams} × stream: {chunks}", flush=True)
                result.rows.append(
                    await _case(transport, ours, bare, streams, chunks, rounds=options.rounds)
                )
    for row in result.rows:
        _add_figures(result, row)
    return result


async def _case(
    transport: str, blitz: _Server, bare: _Server, streams: int, chunks: int, *, rounds: int
) -> dict[str, Any]:
    """`rounds` rounds of each server, alternating; the medians."""
    ours: list[_Round] = []
    theirs: list[_Round] = []
    for _ in range(rounds):
        theirs.append(await _round(transport, bare, streams=streams, chunks=chunks))
        ours.append(await _round(transport, blitz, streams=streams, chunks=chunks))
    blitz_rate = statistics.median(r.rate for r in ours)
    bare_rate = statistics.median(r.rate for r in theirs)
    return {
        "transport": transport,
        "streams": streams,
        "chunks": chunks,
        "blitz_deltas_per_s": blitz_rate,
        "bare_events_per_s": bare_rate,
        "ratio": blitz_rate / bare_rate,
        "blitz_cpu_us_per_delta": statistics.median(r.cpu_per_delta for r in ours),
        "bare_cpu_us_per_event": statistics.median(r.cpu_per_delta for r in theirs),
        "blitz_events_per_turn": statistics.median(r.events_per_stream for r in ours),
        "lost_deltas": sum(r.lost for r in ours),
    }


def _add_figures(result: Result, row: dict[str, Any]) -> None:
    case = f"{row['transport']}_{row['streams']}"
    said = f"{_SPELLED[row['transport']]}, {row['streams']} × stream: {row['chunks']}"
    for key, label, unit in _FIGURES:
        result.add(f"{case}_{key}", f"{said}: {label}", row[key], unit)
