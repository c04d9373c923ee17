"""After a burst the server hands the heap's free pages back (blitz.process.trimming_heap)."""

from __future__ import annotations

import asyncio
import ctypes
import sys

import pytest

from blitz.process import trimming_heap

_MB = 2**20


class _Resident:
    """Resident memory that follows a script, one value per look (the last held)."""

    def __init__(self, *values: int, looks: int) -> None:
        self.values = list(values)
        self.looks = looks
        self.looked = asyncio.Event()

    def __call__(self) -> int:
        self.looks -= 1
        if self.looks <= 0:
            self.looked.set()
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


async def _trims(resident: _Resident, *, busy: bool = False) -> int:
    """How many trims the script of `resident` brings, the process idle, or `busy`."""
    trims = 0
    used = 0.0

    def trim() -> None:
        nonlocal trims
        trims += 1

    def cpu() -> float:
        nonlocal used
        used += 1.0 if busy else 0.0
        return used

    gate = trimming_heap(every=0.001, growth=4 * _MB, resident=resident, trim=trim, cpu=cpu)
    async with gate:
        await asyncio.wait_for(resident.looked.wait(), 30)
    return trims


async def test_a_burst_that_grew_the_heap_is_trimmed_once_it_is_over():
    # Grows for three looks, then holds still for two: one trim, then none while it stays.
    resident = _Resident(
        100 * _MB, 103 * _MB, 106 * _MB, 109 * _MB, 109 * _MB, 109 * _MB, 101 * _MB, looks=20
    )
    assert await _trims(resident) == 1


async def test_no_trim_while_memory_still_grows():
    resident = _Resident(*(100 * _MB + i * 5 * _MB for i in range(40)), looks=30)
    assert await _trims(resident) == 0


async def test_no_trim_in_a_pause_of_a_burst():
    # Still for one look in the middle of a burst: not yet; once it is over, one trim.
    resident = _Resident(
        100 * _MB,
        105 * _MB,
        105 * _MB,
        110 * _MB,
        115 * _MB,
        115 * _MB,
        115 * _MB,
        101 * _MB,
        looks=20,
    )
    trims = await _trims(resident)
    assert trims == 1


async def test_no_trim_while_the_process_is_busy():
    """Memory that holds still under load is not trimmed: a trim holds malloc's lock."""
    resident = _Resident(100 * _MB, 110 * _MB, looks=20)
    assert await _trims(resident, busy=True) == 0


async def test_no_trim_for_a_small_growth():
    resident = _Resident(100 * _MB, 102 * _MB, 103 * _MB, looks=20)
    assert await _trims(resident) == 0


async def test_growth_is_counted_from_the_lowest_since_the_last_trim():
    # Falls to 90 MB by itself; 95 MB is then a growth of 5 since it, and is trimmed.
    resident = _Resident(100 * _MB, 90 * _MB, 95 * _MB, 95 * _MB, looks=20)
    assert await _trims(resident) == 1


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.skipif(sys.platform != "linux", reason="malloc_trim and /proc are glibc's and Linux's")
async def test_the_real_heap_gives_back_what_a_burst_freed():
    try:
        ctypes.CDLL(None).malloc_trim  # noqa: B018 - glibc only
    except AttributeError:
        pytest.skip("not glibc")
    async with trimming_heap(every=0.05, growth=4 * _MB):
        # 64 MB in malloc's heap (past pymalloc's 512 bytes), nine blocks in ten freed:
        # the tenth pins the heap's top, so nothing goes back without a trim.
        blocks = [bytes(4000) for _ in range(16_000)]
        kept = blocks[::10]
        del blocks
        peak = _resident()
        for _ in range(200):
            await asyncio.sleep(0.05)
            if _resident() < peak - 16 * _MB:
                break
        assert _resident() < peak - 16 * _MB, (peak, _resident())
        assert len(kept) == 1600
