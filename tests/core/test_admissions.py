"""Turns being admitted go before agent work (core/admissions.py)."""

from __future__ import annotations

import asyncio

from blitz.core import admissions
from blitz.core.admissions import Admissions


async def test_a_lone_turn_starts_at_once():
    gate = Admissions()
    with gate.admitting():
        pass
    await asyncio.wait_for(gate.let_through(), 0.05)


async def test_a_run_waits_while_a_turn_is_being_admitted():
    gate = Admissions()
    admitting = gate.admitting()
    admitting.__enter__()
    waiting = asyncio.create_task(gate.let_through())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    admitting.__exit__(None, None, None)
    await asyncio.wait_for(waiting, 1)


async def test_a_run_waits_for_a_burst_to_pass_but_not_for_ever(monkeypatch):
    monkeypatch.setattr(admissions, "_QUIET", 0.05)
    monkeypatch.setattr(admissions, "_MOST", 0.3)
    gate = Admissions()
    with gate.admitting():
        pass
    with gate.admitting():  # a second one at once: a burst is coming in
        pass
    loop = asyncio.get_running_loop()
    began = loop.time()
    await gate.let_through()
    assert loop.time() - began >= 0.04, "it waited for the burst to go quiet"

    async def steady() -> None:  # admissions for ever, 20 ms apart
        while True:
            with gate.admitting():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.01)

    feeding = asyncio.create_task(steady())
    began = loop.time()
    await asyncio.wait_for(gate.let_through(), 2)
    assert loop.time() - began < 1, "a steady stream of admissions does not starve it"
    feeding.cancel()
