"""`python -m bench.busy_loop [SPELL_MS ...]`: how long grpc.aio takes to send while its
event loop is busy.

A bare grpc.aio server on uvloop (no Blitz) holds 1,000 server streams open, 250 on each
of 4 connections from a client process of its own. Once the client has every stream's
first message, each stream sends 5 more, the streams starting 1.5 ms apart, like turns
parking one after another, while a task on the server's loop burns CPU in spells of
SPELL_MS milliseconds, giving way to the loop (`asyncio.sleep(0)`) between spells. It
prints, per spell length, how long a send took (p50, p99) and how many completed in 4 s.
`0` runs with nothing burning; `1.5+1` burns 1.5 ms and then leaves the loop idle for 1 ms.

This is the profile behind "What the turns' events wait for after a burst" in
docs/benchmarks.md: grpc.aio moves its messages along between the loop's callbacks, so a
loop kept busy by long spells of other work slows every stream.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import grpc
import uvloop

from blitz.v1 import session_pb2 as s
from blitz.v1 import session_pb2_grpc
from blitz.v1 import turn_pb2 as t

_STREAMS = 1000
_MESSAGES = 5
_APART_S = 0.0015
_WINDOW_S = 4.0

_CLIENT = """
import asyncio, sys, grpc
from blitz.v1 import session_pb2 as s, session_pb2_grpc
async def main():
    channels = [grpc.aio.insecure_channel(sys.argv[1]) for _ in range(4)]
    stubs = [session_pb2_grpc.SessionServiceStub(c) for c in channels]
    async def one(i):
        async for _ in stubs[i % 4].Watch(s.WatchRequest(session_id=str(i))):
            pass
    await asyncio.gather(*(one(i) for i in range({streams})))
asyncio.run(main())
"""


class _Streams(session_pb2_grpc.SessionServiceServicer):
    def __init__(self) -> None:
        self.opened = 0
        self.all_open = asyncio.Event()
        self.go = asyncio.Event()
        self.sends: list[float] = []

    async def Watch(self, request: s.WatchRequest, context: object):  # type: ignore[override]
        event = t.TurnEvent(session_id="s", turn_id="t", text=t.Text(text="x" * 100))
        yield event
        self.opened += 1
        if self.opened == _STREAMS:
            self.all_open.set()
        await self.go.wait()
        await asyncio.sleep(_APART_S * (int(request.session_id) % _STREAMS))
        for _ in range(_MESSAGES):
            began = time.perf_counter()
            yield event
            self.sends.append(time.perf_counter() - began)


async def _burn(spell_s: float, idle_s: float) -> None:
    while True:
        end = time.perf_counter() + spell_s
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(idle_s)


async def _one(spell: str) -> str:
    spell_ms, _, idle_ms = spell.partition("+")
    streams = _Streams()
    server = grpc.aio.server()
    session_pb2_grpc.add_SessionServiceServicer_to_server(streams, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    code = _CLIENT.format(streams=_STREAMS)
    # Popen, not the loop's subprocess_exec: uvloop forks beside grpc's threads.
    command = [sys.executable, "-c", code, f"127.0.0.1:{port}"]
    client = await asyncio.to_thread(subprocess.Popen, command)
    try:
        await streams.all_open.wait()
        burner = None
        if float(spell_ms) > 0:
            burner = asyncio.create_task(_burn(float(spell_ms) / 1000, float(idle_ms or 0) / 1000))
        streams.go.set()
        await asyncio.sleep(_WINDOW_S)
        if burner is not None:
            burner.cancel()
    finally:
        client.kill()
        await asyncio.to_thread(client.wait)
        await server.stop(None)
    sends = sorted(streams.sends)
    if not sends:
        return f"spell {spell} ms: no send completed"
    p50 = sends[len(sends) // 2] * 1000
    p99 = sends[int(len(sends) * 0.99)] * 1000
    total = _STREAMS * _MESSAGES
    return f"spell {spell} ms: send p50 {p50:.1f} ms, p99 {p99:.1f} ms, {len(sends)}/{total} sent"


async def _main(spells: list[str]) -> None:
    for spell in spells:
        print(await _one(spell), flush=True)


def main() -> None:
    spells = sys.argv[1:] or ["0", "0.2", "0.5", "1.5", "1.5+1"]
    uvloop.run(_main(spells))


if __name__ == "__main__":
    main()
