"""A receiver that hangs for 10 s holds neither the turn nor the other webhooks' deliveries.

Asserted by order, not by a stopwatch: the turn's `finished`, and every event of the other
webhook, arrive while the hanging receiver still holds its first request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from support.receiver import Receiver
from support.webhooks import create
from support.wire import decide, drive, open_wire

from blitz.server import running_server
from blitz.v1 import turn_pb2 as t

HANG = 10.0


async def test_a_hanging_receiver_delays_neither_the_turn_nor_other_deliveries(hooked_settings):
    released = threading.Event()

    def hang(_):
        released.wait(HANG)
        return 200, {}, b"late"

    settings = replace(hooked_settings, webhook_timeout=HANG + 20)
    async with running_server(settings) as server:
        wire = open_wire("grpc", server)
        try:
            with Receiver(hang) as slow, Receiver() as quick:
                await create(wire, slow.url, ["*"])
                await create(wire, quick.url, ["*"])
                session = await wire.create_session()
                events = await drive(
                    wire,
                    session.id,
                    "$ echo hi\nAll done.",
                    decide(wire, session.id, t.DECISION_ONCE),
                )
                finished_at = time.time()
                kinds = [e.WhichOneof("kind") for e in events]
                told = [k for k in kinds if k in ("approval_request", "resolution", "finished",
                                                   "session_state")]  # fmt: skip
                got = await quick.wait_for(lambda r: len(r) >= len(told))
                quick_done = time.time()
                [first] = await slow.wait_for(lambda r: len(r) >= 1)
                assert first.answered == 0, "the slow receiver still holds its first request"
                assert finished_at < first.at + HANG and quick_done < first.at + HANG
                assert [r.payload()["type"] for r in got] == told, "all, in order"
                released.set()
                await slow.wait_for(lambda r: len(r) >= len(told))
        finally:
            await wire.close()
