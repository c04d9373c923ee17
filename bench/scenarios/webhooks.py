"""`webhooks`: how soon a parked turn's `approval_request` reaches a webhook, beside how
soon it reaches a Watch stream, and what a subscription costs the server.

On a fresh `blitz serve` allowed to reach 127.0.0.1 (`--webhook-allow-private`), with one
webhook (`approval_request` only) to a receiver in the harness's process
(`bench/receiver.py`): `--webhook-turns` sessions each get a Watch(follow) stream, then
each runs `$ echo webhook-I`, started `--wave` at a time, which parks on its approval.
For each turn, from the event's own stored time (`TurnEvent.time`, stamped as the log
writes it) to:

- the receiver's 200 for its delivery (signed, POSTed, answered): p50 and p99;
- its arrival on the session's Watch stream: p50 and p99.

Both are wall-clock differences on one machine, so they include the harness's own loop,
which carries the receiver and every stream. Server CPU per parked turn is read beside
the same run on a server with no webhook, and the difference is what a delivery costs:
its outbox row, its expansion, the claim, the signed POST and the recorded attempt.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import datetime
from typing import Any

import grpc

from bench.calls import Stub, create_sessions, open_stubs, warm_up
from bench.procfs import usage
from bench.receiver import receiver
from bench.results import Result
from bench.servers import blitz_server
from bench.stats import ms, percentile
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh
from blitz.v1.webhooks_pb2_grpc import WebhookServiceStub

__all__ = ["NAME", "add_arguments", "run"]

NAME = "webhooks"

_FLAGS = ("--webhook-allow-private=127.0.0.0/8",)
_WITHIN_S = 120.0


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--webhook-turns",
        type=int,
        default=1000,
        help="turns that park, each in a session of its own (default 1000)",
    )
    group.add_argument(
        "--webhook-wave",
        type=int,
        default=100,
        help="turns started at a time (default 100)",
    )


async def run(options: argparse.Namespace) -> Result:
    turns = options.webhook_turns
    result = Result(NAME, params={"turns": turns, "wave": options.webhook_wave})
    print(f"webhooks: {turns} parked turns, one subscription", flush=True)
    hooked = await _measure(options, subscribed=True)
    print(f"webhooks: {turns} parked turns, no subscription", flush=True)
    plain = await _measure(options, subscribed=False)
    result.rows += [hooked, plain]
    result.series["webhook_ms"] = hooked["webhook_ms"]
    result.series["watch_ms"] = hooked["watch_ms"]
    n = turns
    result.add("webhook_p50_ms", f"approval_request stored → receiver's 2xx p50 ({n})",
               percentile(hooked["webhook_ms"], 50), "ms")  # fmt: skip
    result.add("webhook_p99_ms", f"approval_request stored → receiver's 2xx p99 ({n})",
               percentile(hooked["webhook_ms"], 99), "ms")  # fmt: skip
    result.add("watch_p50_ms", f"the same event stored → Watch stream p50 ({n})",
               percentile(hooked["watch_ms"], 50), "ms")  # fmt: skip
    result.add("watch_p99_ms", f"the same event stored → Watch stream p99 ({n})",
               percentile(hooked["watch_ms"], 99), "ms")  # fmt: skip
    result.add("delivered", "deliveries received", hooked["delivered"], "")
    result.add("park_cpu_ms", "server CPU per parked turn, one subscription",
               hooked["cpu_ms"], "ms")  # fmt: skip
    result.add("park_cpu_plain_ms", "server CPU per parked turn, no subscription",
               plain["cpu_ms"], "ms")  # fmt: skip
    result.add("delivery_cpu_ms", "server CPU a delivery adds to its turn",
               hooked["cpu_ms"] - plain["cpu_ms"], "ms")  # fmt: skip
    return result


async def _measure(options: argparse.Namespace, *, subscribed: bool) -> dict[str, Any]:
    turns = options.webhook_turns
    async with (
        receiver() as rx,
        blitz_server(_FLAGS) as server,
        open_stubs(server.grpc_target, options.channels) as stubs,
    ):
        await warm_up(stubs)
        session_ids = await create_sessions(stubs, turns, title="webhooks")
        channel = grpc.aio.insecure_channel(server.grpc_target)
        try:
            if subscribed:
                hooks = WebhookServiceStub(channel)
                await hooks.CreateWebhook(
                    wh.CreateWebhookRequest(url=rx.url, events=["approval_request"])
                )
            watched: dict[str, float] = {}
            stored: dict[str, float] = {}
            watches = [_watch(stubs[i % len(stubs)], sid, watched, stored)
                       for i, sid in enumerate(session_ids)]  # fmt: skip
            watching = [asyncio.create_task(w) for w in watches]
            await asyncio.sleep(0.5)  # every Watch open before the first turn
            gate = asyncio.Semaphore(options.webhook_wave)
            before = usage(server.pid)

            async def start(i: int, session_id: str) -> None:
                async with gate:
                    turn = t.Turn(text=f"$ echo webhook-{i}")
                    call = stubs[i % len(stubs)].RunTurn(
                        s.RunTurnRequest(session_id=session_id, turn=turn)
                    )
                    async for event in call:
                        if event.HasField("approval_request"):
                            break
                    call.cancel()

            async with asyncio.TaskGroup() as group:
                for i, session_id in enumerate(session_ids):
                    group.create_task(start(i, session_id))
            deadline = time.monotonic() + _WITHIN_S
            while subscribed and len(rx.delivered) < turns and time.monotonic() < deadline:
                rx.arrived.clear()
                try:
                    await asyncio.wait_for(rx.arrived.wait(), 1)
                except TimeoutError:
                    pass
            await asyncio.sleep(1)  # let the server finish what it records
            cpu = (usage(server.pid) - before).cpu
            for task in watching:
                task.cancel()
            await asyncio.gather(*watching, return_exceptions=True)
        finally:
            await channel.close()
    webhook_ms = [ms(d.answered - _stamp(d.payload["data"]["time"])) for d in rx.delivered]
    watch_ms = [ms(watched[sid] - stored[sid]) for sid in watched if sid in stored]
    return {
        "subscribed": subscribed,
        "turns": turns,
        "delivered": len(rx.delivered),
        "webhook_ms": webhook_ms,
        "watch_ms": watch_ms,
        "cpu_ms": ms(cpu / turns),
    }


async def _watch(
    stub: Stub, session_id: str, watched: dict[str, float], stored: dict[str, float]
) -> None:
    """Follow the session; note when its approval_request arrives, and when it was stored."""
    async for event in stub.Watch(s.WatchRequest(session_id=session_id, follow=True)):
        if event.HasField("approval_request"):
            watched[session_id] = time.time()
            stored[session_id] = event.time.seconds + event.time.nanos / 1e9
            return


def _stamp(text: str) -> float:
    """An RFC 3339 time of a payload, as Unix seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
