"""Agent work gives way to the calls people wait on (core/driver/interactions.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from blitz.core.driver.interactions import Interactions


def _recorded(gate: Interactions, went: list[object]) -> Callable[[object], Awaitable[None]]:
    """A step that, once it may go on, says so in `went`."""

    async def step(name: object) -> None:
        await gate.give_way()
        went.append(name)

    return step


async def test_with_no_interaction_a_step_does_not_wait():
    gate = Interactions()
    with gate.under_way():
        pass
    step = gate.give_way()
    # Not even one turn of the loop: the coroutine ends on its first send.
    try:
        step.send(None)
    except StopIteration:
        pass
    else:  # pragma: no cover - the failure
        step.close()
        raise AssertionError("the step waited")


async def test_a_step_waits_while_an_interaction_is_under_way():
    gate = Interactions()
    interaction = gate.under_way()
    interaction.__enter__()
    waiting = asyncio.create_task(gate.give_way())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()
    assert gate.waiting == 1
    interaction.__exit__(None, None, None)
    await asyncio.wait_for(waiting, 5)
    assert gate.waiting == 0


async def test_an_interaction_never_waits_for_every_waiting_step():
    """Once none is under way, waiting steps go a few per turn of the loop, each only
    while none is: an interaction that comes meanwhile stops the rest where they are."""
    gate = Interactions()
    went: list[int] = []
    three = asyncio.Event()

    async def step(n: int) -> None:
        await gate.give_way()
        went.append(n)
        if len(went) == 3:
            three.set()

    first = gate.under_way()
    first.__enter__()
    steps = [asyncio.create_task(step(n)) for n in range(100)]
    await asyncio.sleep(0)
    first.__exit__(None, None, None)
    await asyncio.wait_for(three.wait(), 5)
    with gate.under_way():
        await asyncio.sleep(0)  # the steps let go already go on
        gone = len(went)
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(went) == gone, "no step goes while an interaction is under way"
        assert gone < 100
    await asyncio.wait_for(asyncio.gather(*steps), 5)
    assert went == list(range(100)), "in the order they came"


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def _per_turn_of_the_loop(gate: Interactions, steps: int, busy: float) -> dict[int, int]:
    """How many of `steps` ready steps, each `busy` seconds of work, began in each turn."""
    turn = 0
    began: dict[int, int] = {}

    async def count_turns() -> None:
        nonlocal turn
        while True:
            await asyncio.sleep(0)
            turn += 1

    async def step() -> None:
        await gate.give_way()
        began[turn] = began.get(turn, 0) + 1
        _busy(busy)

    counting = asyncio.create_task(count_turns())
    await asyncio.sleep(0)
    try:
        await asyncio.wait_for(asyncio.gather(*(step() for _ in range(steps))), 10)
    finally:
        counting.cancel()
    assert sum(began.values()) == steps
    return began


async def test_long_steps_begin_one_per_turn_of_the_loop():
    """Even with no interaction, a thousand ready turns do not all run in one turn of the
    loop: whatever else the loop has to do waits for about one step."""
    gate = Interactions(slice_s=0.001, quiet_slice_s=0.001)
    began = await _per_turn_of_the_loop(gate, 20, busy=0.002)
    assert max(began.values()) == 1, began


async def test_with_no_interaction_for_a_while_steps_go_in_longer_slices():
    """Agent work alone on the loop goes a few long steps to a turn (and so its commits
    go in fewer, larger transactions), still not all of them in one."""
    # Twenty steps of 30 ms each, slices of 300 ms: about ten to a turn, and a stall of
    # up to a quarter of a second in the first step still leaves room for a second.
    gate = Interactions(slice_s=0.001, quiet_slice_s=0.3)
    began = await _per_turn_of_the_loop(gate, 20, busy=0.03)
    assert 1 < max(began.values()) < 20, began


async def test_once_an_interaction_begins_the_slices_are_short_again():
    gate = Interactions(slice_s=0.001, quiet_slice_s=0.05, quiet=60.0)
    with gate.under_way():
        pass
    began = await _per_turn_of_the_loop(gate, 20, busy=0.002)
    assert max(began.values()) == 1, began


async def test_short_steps_share_a_turn_of_the_loop():
    """A stream's events, microseconds each, are not slowed to one per turn."""
    began = await _per_turn_of_the_loop(Interactions(slice_s=1.0), 50, busy=0.0)
    assert max(began.values()) > 1, began


async def test_a_new_step_waits_behind_those_already_waiting():
    gate = Interactions()
    went: list[object] = []
    step = _recorded(gate, went)

    with gate.under_way():
        early = asyncio.create_task(step("early"))
        await asyncio.sleep(0)
    late = asyncio.create_task(step("late"))  # none under way, but one waits
    await asyncio.wait_for(asyncio.gather(early, late), 5)
    assert went == ["early", "late"]


async def test_interactions_that_never_stop_do_not_starve_a_step():
    gate = Interactions(most=0.2)

    async def steady() -> None:  # always one under way, overlapping
        while True:
            with gate.under_way():
                await asyncio.sleep(0.01)

    feeding = [asyncio.create_task(steady()) for _ in range(2)]
    try:
        await asyncio.sleep(0.005)
        await asyncio.wait_for(gate.give_way(), 5)
    finally:
        for task in feeding:
            task.cancel()


async def test_a_step_cancelled_while_waiting_is_skipped():
    gate = Interactions()
    went: list[object] = []
    step = _recorded(gate, went)

    with gate.under_way():
        steps = [asyncio.create_task(step(n)) for n in range(3)]
        await asyncio.sleep(0)
        steps[1].cancel()
    await asyncio.wait_for(asyncio.gather(steps[0], steps[2]), 5)
    assert went == [0, 2]
