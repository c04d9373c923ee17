"""A bare server of the same stack as Blitz, for comparison: no core, no store, no agent.

`Watch` streams pre-built partial-text events as fast as the transport takes them:
`after_seq` of them when it is set, else the DEFAULT_COUNT given on the command line.
With `follow`, the stream then stays open, sending nothing, until the client leaves: an
idle open stream, what a parked turn's RunTurn is to the transport. Every other method
is unimplemented.

    python -m bench.bare_server grpc|connect PORT DEFAULT_COUNT
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import grpc
import uvicorn
import uvloop

from blitz.v1 import session_connect, session_pb2_grpc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t


class Events:
    """The pre-built events, made once per count asked for and kept."""

    def __init__(self, default_count: int) -> None:
        self.default_count = default_count
        self._built: dict[int, list[t.TurnEvent]] = {}

    def for_request(self, request: s.WatchRequest) -> list[t.TurnEvent]:
        count = int(request.after_seq) or self.default_count
        if count not in self._built:
            self._built[count] = [
                t.TurnEvent(
                    seq=i + 1,
                    session_id="s",
                    turn_id="t",
                    text=t.Text(text=f"chunk {i} ", partial=True),
                )
                for i in range(count)
            ]
        return self._built[count]


async def _stream(events: Events, request: s.WatchRequest) -> AsyncIterator[t.TurnEvent]:
    for event in events.for_request(request):
        yield event
    if request.follow:
        # Cancelled when the client goes away.
        await asyncio.get_running_loop().create_future()


class GrpcWatch(session_pb2_grpc.SessionServiceServicer):
    def __init__(self, events: Events) -> None:
        self.events = events

    async def Watch(self, request, context) -> AsyncIterator[t.TurnEvent]:
        async for event in _stream(self.events, request):
            yield event


class ConnectWatch(session_connect.SessionService):
    def __init__(self, events: Events) -> None:
        self.events = events

    async def watch(self, request, ctx) -> AsyncIterator[t.TurnEvent]:
        async for event in _stream(self.events, request):
            yield event


async def serve_grpc(port: int, events: Events) -> None:
    server = grpc.aio.server()
    session_pb2_grpc.add_SessionServiceServicer_to_server(GrpcWatch(events), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def serve_connect(port: int, events: Events) -> None:
    app = session_connect.SessionServiceASGIApplication(ConnectWatch(events))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="httptools", log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    await server.serve()


def main() -> None:
    kind, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    events = Events(count)
    events.for_request(s.WatchRequest())  # built before the first client, as before
    uvloop.run(serve_grpc(port, events) if kind == "grpc" else serve_connect(port, events))


if __name__ == "__main__":
    main()
