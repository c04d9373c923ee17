"""Percentiles of latencies, and pacing calls at a steady rate.

A latency list is of seconds, as `time.perf_counter()` differences; figures are reported
in milliseconds by whoever turns them into `Figure`s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence

__all__ = ["ms", "now", "paced", "percentile"]

now = time.perf_counter


def percentile(values: Sequence[float], q: float) -> float:
    """The `q`th percentile (0 to 100), interpolated between the nearest ranks; NaN if empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ms(seconds: float) -> float:
    return seconds * 1000


async def paced(count: int, per_second: float) -> AsyncIterator[int]:
    """Yield 0 to count-1, the Ith at start + I/per_second, whatever the consumer did.

    The consumer must not wait on the call it paces (it starts a task), or a slow call
    would hold back the ones after it and hide the very queueing the pacing is there to
    reveal.
    """
    start = now()
    for i in range(count):
        delay = start + i / per_second - now()
        if delay > 0:
            await asyncio.sleep(delay)
        yield i
