"""Blocking calls off the loop: a stuck one is abandoned in time and holds one bounded slot."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from blitz.offload import CallTimedOut, Offload


async def test_stuck_calls_are_abandoned_in_time_and_hold_no_more_than_their_threads() -> None:
    offload = Offload(threads=2, timeout=0.3)
    release = threading.Event()
    started = time.monotonic()
    outcomes = await asyncio.gather(
        *(offload.run(release.wait) for _ in range(4)), return_exceptions=True
    )
    # Two ran and were abandoned, two never found a free thread: all four in their time.
    assert [type(o) for o in outcomes] == [CallTimedOut] * 4
    assert time.monotonic() - started < 2
    assert offload.running == 2

    release.set()
    for _ in range(100):
        if offload.running == 0:
            break
        await asyncio.sleep(0.01)
    assert offload.running == 0, "an abandoned thread gives its slot back when it ends"
    assert await offload.run(lambda: 42) == 42


async def test_a_calls_own_errors_reach_the_caller_as_they_are() -> None:
    offload = Offload(threads=1, timeout=5)

    def fails() -> None:
        raise TimeoutError("the call's own, not the offload's")

    with pytest.raises(TimeoutError, match="the call's own"):
        await offload.run(fails)
    with pytest.raises(FileNotFoundError):
        await offload.run(open, "/nonexistent/blitz")
    assert offload.running == 0


async def test_the_loop_runs_on_while_a_call_blocks() -> None:
    offload = Offload(threads=1, timeout=5)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        await offload.run(time.sleep, 0.3)
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
    assert ticks >= 10


async def test_a_thread_whose_call_finished_takes_the_next_and_a_stuck_one_keeps_its_own() -> None:
    offload = Offload(threads=2, timeout=5)
    first = await offload.run(threading.get_ident)
    assert await offload.run(threading.get_ident) == first, "the idle thread took the call"
    stuck, release = await _hold_a_thread(offload)
    # The one thread is held: the next call gets a thread of its own, and is not kept waiting.
    assert await asyncio.wait_for(offload.run(threading.get_ident), 5) != first
    release.set()
    assert await stuck is True


async def test_a_burst_of_short_calls_starts_no_more_than_eager_threads() -> None:
    # Held up only after 30 s: a loaded machine's stall of a short call starts no thread.
    offload = Offload(threads=16, timeout=5, eager=2, held_up_after=30)
    idents = await asyncio.gather(*(offload.run(_briefly) for _ in range(200)))
    assert len(set(idents)) <= 2, "short calls wait for the threads there are"
    assert offload.running == 0


async def test_calls_behind_a_held_up_thread_get_another_one() -> None:
    offload = Offload(threads=3, timeout=5, eager=1, held_up_after=0.05)
    stuck, release = await _hold_a_thread(offload)
    # The one eager thread is held: after a moment the next call gets a thread of its own.
    assert await asyncio.wait_for(offload.run(lambda: 7), 5) == 7
    release.set()
    assert await stuck is True


async def test_a_call_whose_time_is_up_before_it_starts_is_never_run() -> None:
    offload = Offload(threads=1, timeout=0.3)
    stuck, release = await _hold_a_thread(offload)
    ran = threading.Event()
    with pytest.raises(CallTimedOut, match="stayed busy"):
        await offload.run(ran.set)
    release.set()
    with pytest.raises(CallTimedOut, match="took longer"):
        await stuck
    assert await offload.run(lambda: 42) == 42, "the thread is free again"
    assert not ran.is_set(), "the call that never started was dropped"


def _briefly() -> int:
    time.sleep(0.001)
    return threading.get_ident()


async def _hold_a_thread(offload: Offload) -> tuple[asyncio.Future[bool], threading.Event]:
    """A call that holds one of `offload`'s threads until the event is set; it has begun."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> bool:
        holding.set()
        return release.wait()

    stuck = asyncio.ensure_future(offload.run(hold))
    assert await asyncio.to_thread(holding.wait, 5)
    return stuck, release
