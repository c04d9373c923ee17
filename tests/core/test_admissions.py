"""Turns being admitted go before agent work (core/admissions.py)."""

from __future__ import annotations

import asyncio

from blitz.core import admissions
from blitz.core.admissions import Admissions


def _burst(gate: Admissions, count: int = admissions._BURST) -> None:
    for _ in range(count):
        with gate.admitting():
            pass


async def test_a_lone_turn_starts_at_once():
    gate = Admissions()
    with gate.admitting():
        pass
    await asyncio.wait_for(gate.let_through(), 0.05)


async def test_turns_sent_at_a_persons_pace_are_no_burst():
    gate = Admissions()
    _burst(gate, admissions._BURST - 1)
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


async def test_a_run_waits_for_a_burst_to_pass_but_not_for_ever():
    gate = Admissions(window=0.05, most=0.3)
    _burst(gate)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await gate.let_through()
    assert loop.time() - began >= 0.04, "it waited for the burst to pass"

    async def steady() -> None:  # admissions for ever, a burst's worth every 20 ms
        while True:
            with gate.admitting():
                await asyncio.sleep(0.01)
            _burst(gate)
            await asyncio.sleep(0.01)

    feeding = asyncio.create_task(steady())
    began = loop.time()
    await asyncio.wait_for(gate.let_through(), 2)
    assert loop.time() - began < 1, "a steady stream of admissions does not starve it"
    feeding.cancel()


async def test_held_runs_go_in_order_one_per_turn_of_the_loop():
    """Let go together, their first steps would all land in one turn of the loop."""
    gate = Admissions(window=0.05)
    _burst(gate)
    went: list[tuple[int, int]] = []
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    async def run(n: int) -> None:
        await gate.let_through()
        went.append((n, turns))

    counting = asyncio.create_task(count_turns())
    runs = [asyncio.create_task(run(n)) for n in range(5)]
    await asyncio.sleep(0)
    runs[2].cancel()  # one gives up while held: skipped
    await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 2)
    counting.cancel()
    assert [n for n, _ in went] == [0, 1, 3, 4]
    assert len({turn for _, turn in went}) == 4, "one per turn of the loop"
