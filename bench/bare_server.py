"""A bare server of the same stack as Blitz, for comparison: no core, no store, no agent.

`Watch` streams N pre-built partial-text events as fast as the transport takes them; every
other method is unimplemented. Run as: python bench/bare_server.py grpc|connect PORT N
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import grpc
import uvicorn
import uvloop

from blitz.v1 import session_connect, session_pb2_grpc
from blitz.v1 import turn_pb2 as t


def prebuilt(count: int) -> list[t.TurnEvent]:
    return [
        t.TurnEvent(
            seq=i + 1, session_id="s", turn_id="t", text=t.Text(text=f"chunk {i} ", partial=True)
        )
        for i in range(count)
    ]


class GrpcWatch(session_pb2_grpc.SessionServiceServicer):
    def __init__(self, events: list[t.TurnEvent]) -> None:
        self.events = events

    async def Watch(self, request, context) -> AsyncIterator[t.TurnEvent]:
        for event in self.events:
            yield event


class ConnectWatch(session_connect.SessionService):
    def __init__(self, events: list[t.TurnEvent]) -> None:
        self.events = events

    async def watch(self, request, ctx) -> AsyncIterator[t.TurnEvent]:
        for event in self.events:
            yield event


async def serve_grpc(port: int, events: list[t.TurnEvent]) -> None:
    server = grpc.aio.server()
    session_pb2_grpc.add_SessionServiceServicer_to_server(GrpcWatch(events), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def serve_connect(port: int, events: list[t.TurnEvent]) -> None:
    app = session_connect.SessionServiceASGIApplication(ConnectWatch(events))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http="httptools", log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    await server.serve()


def main() -> None:
    kind, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    events = prebuilt(count)
    uvloop.run(serve_grpc(port, events) if kind == "grpc" else serve_connect(port, events))


if __name__ == "__main__":
    main()
