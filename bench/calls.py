"""The harness's side of the wire: gRPC channels, and the calls several scenarios make.

Calls go through the generated grpc.aio stubs, with nothing between the stub and the
clock, so a latency is the server's plus the transport's plus this client's own loop.
A turn that parks is read one event at a time (`call.read()`), so that its stream can
stay open, unread, while other things happen, and be read on later.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import grpc

from bench.servers import grpc_options
from bench.stats import now
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_pb2_grpc import SessionServiceStub as Stub

__all__ = [
    "Stub",
    "TurnTimes",
    "create_sessions",
    "decide",
    "deltas_in",
    "open_stubs",
    "read_to_end",
    "run_to_end",
    "run_to_end_resuming",
    "run_to_park",
    "warm_up",
]

# How many unary calls the harness keeps in flight while it sets up (sessions, say).
_SETUP_CONCURRENCY = 64


@asynccontextmanager
async def open_stubs(
    target: str, channels: int, *, own_connections: bool = True
) -> AsyncIterator[list[Stub]]:
    """`channels` connections to one server, each with a SessionService stub, all ready.

    Many calls share each channel (HTTP/2 streams); several channels spread them over
    connections, as many clients would. Without `own_connections`, the channels share one
    connection, as grpcio makes them by default.
    """
    options = grpc_options(own_connection=own_connections)
    opened = [grpc.aio.insecure_channel(target, options=options) for _ in range(channels)]
    try:
        for channel in opened:
            await asyncio.wait_for(channel.channel_ready(), 30)
        yield [Stub(channel) for channel in opened]
    finally:
        for channel in opened:
            await channel.close()


async def create_sessions(stubs: Sequence[Stub], count: int, *, title: str) -> list[str]:
    """`count` new sessions, spread over the stubs; session I was made through stub I % len."""
    gate = asyncio.Semaphore(_SETUP_CONCURRENCY)

    async def one(i: int) -> str:
        async with gate:
            session = await stubs[i % len(stubs)].CreateSession(
                s.CreateSessionRequest(title=f"{title} {i}")
            )
            return str(session.id)

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(i)) for i in range(count)]
    return [task.result() for task in tasks]


@dataclass
class TurnTimes:
    """One turn, as the client saw it: `perf_counter()` times, NaN for what did not happen."""

    session_id: str
    sent: float = math.nan
    accepted: float = math.nan
    parked: float = math.nan
    request_id: str = ""
    decided: float = math.nan
    resumed: float = math.nan
    """When the turn's first event after `decided` arrived."""
    finished: float = math.nan
    error: str = ""
    """`finished.error.reason`, if the turn failed."""


def _start(stub: Stub, times: TurnTimes, text: str) -> grpc.aio.UnaryStreamCall:
    times.sent = now()
    return stub.RunTurn(s.RunTurnRequest(session_id=times.session_id, turn=t.Turn(text=text)))


async def _next(call: grpc.aio.UnaryStreamCall) -> t.TurnEvent:
    event = await call.read()
    if event is grpc.aio.EOF:
        raise RuntimeError("the turn's stream ended before `finished`")
    assert isinstance(event, t.TurnEvent)
    return event


async def run_to_park(stub: Stub, times: TurnTimes, text: str) -> grpc.aio.UnaryStreamCall:
    """Start a turn that parks on an approval; return its stream, open and unread beyond it."""
    call = _start(stub, times, text)
    while True:
        event = await _next(call)
        if event.HasField("accepted"):
            times.accepted = now()
        elif event.HasField("approval_request"):
            times.parked = now()
            times.request_id = event.approval_request.request_id
            return call
        elif event.HasField("finished"):
            raise RuntimeError(f"the turn finished without parking: {event.finished}")


async def read_to_end(
    call: grpc.aio.UnaryStreamCall, times: TurnTimes, *, resuming: bool = False
) -> int:
    """Read a turn's stream up to `finished`; returns the model deltas in it.

    With `resuming`, the turn's `resolution` is its next event after the Decide
    (`resumed`): what came before it (the `session_state` PARKED after the request) was
    sent before the Decide.
    """
    deltas = 0
    while True:
        event = await _next(call)
        if resuming and math.isnan(times.resumed) and event.HasField("resolution"):
            times.resumed = now()
        deltas += deltas_in(event)
        if event.HasField("accepted"):
            times.accepted = now()
        elif event.HasField("finished"):
            times.finished = now()
            times.error = event.finished.error.reason
            return deltas


async def run_to_end(stub: Stub, times: TurnTimes, text: str) -> int:
    """Run a turn that does not park; returns the model deltas it streamed."""
    return await read_to_end(_start(stub, times, text), times)


async def run_to_end_resuming(stub: Stub, times: TurnTimes, text: str) -> tuple[int, int]:
    """Run a turn that does not park, as a client that falls behind must: when the server
    ends the stream because this reader fell too far behind it (RESOURCE_EXHAUSTED,
    SLOW_CONSUMER), resume from the last event read with Watch(after_seq), as its error
    says. Returns the model deltas read, and how many times it resumed."""
    call: grpc.aio.UnaryStreamCall = _start(stub, times, text)
    deltas = resumed = last_seq = 0
    turn_id = ""
    while True:
        try:
            async for event in call:
                assert isinstance(event, t.TurnEvent)
                last_seq = event.seq
                if not turn_id and event.HasField("accepted"):
                    turn_id = event.turn_id
                    times.accepted = now()
                if turn_id and event.turn_id != turn_id:
                    continue  # a Watch sees the session's other events too
                deltas += deltas_in(event)
                if event.HasField("finished"):
                    times.finished = now()
                    times.error = event.finished.error.reason
                    return deltas, resumed
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or not turn_id:
                raise
        else:
            raise RuntimeError("the turn's stream ended before `finished`")
        resumed += 1
        request = s.WatchRequest(session_id=times.session_id, after_seq=last_seq, follow=True)
        call = stub.Watch(request)


async def decide(stub: Stub, times: TurnTimes) -> float:
    """Approve a parked turn's request once; returns how long the Decide call took."""
    times.decided = now()
    await stub.Decide(
        s.DecideRequest(
            session_id=times.session_id,
            request_id=times.request_id,
            decision=t.DECISION_ONCE,
        )
    )
    return now() - times.decided


def deltas_in(event: t.TurnEvent) -> int:
    """The demo model's `stream: N` chunks in an event, however the server merged them."""
    if event.HasField("text") and event.text.partial and not event.text.thought:
        return event.text.text.count("chunk ")
    return 0


async def warm_up(stubs: Sequence[Stub], turns: int = 5) -> None:
    """A few whole turns of each kind, so that first-use costs (imports, caches) are paid."""
    for session_id in await create_sessions(stubs, turns, title="warm-up"):
        parked = TurnTimes(session_id)
        call = await run_to_park(stubs[0], parked, "$ echo warm")
        await decide(stubs[0], parked)
        await read_to_end(call, parked)
        await run_to_end(stubs[0], TurnTimes(session_id), "hello")
