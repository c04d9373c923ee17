"""Percentiles of latencies, and pacing calls at a steady rate.

A latency list is of seconds, as `time.perf_counter()` differences; figures are reported
in milliseconds by whoever turns them into `Figure`s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

__all__ = ["TimedTurn", "burst_and_resume", "ms", "now", "paced", "percentile"]

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


class TimedTurn(Protocol):
    """A turn's moments (`now()`): sent, accepted, parked, decided, its next event after
    the Decide (`resumed`) and finished."""

    sent: float
    accepted: float
    parked: float
    decided: float
    resumed: float
    finished: float


def burst_and_resume(
    turns: Sequence[TimedTurn], *, start: float, last_park: float, first: float, last: float
) -> dict[str, float]:
    """The latency figures of a burst of turns to their park (from `start` to the last
    park) and of their resumption (from the `first` Decide to the `last` finished), as the
    sessions-like scenarios report them, whichever server ran them."""
    size = len(turns)
    accepted = [t.accepted - t.sent for t in turns]
    parked = [t.parked - t.sent for t in turns]
    next_event = [t.resumed - t.decided for t in turns]
    finished = [t.finished - t.decided for t in turns]
    return {
        "burst_rate": size / (last_park - start),
        "burst_accepted_p50_ms": ms(percentile(accepted, 50)),
        "burst_accepted_p99_ms": ms(percentile(accepted, 99)),
        "burst_parked_p50_ms": ms(percentile(parked, 50)),
        "burst_parked_p99_ms": ms(percentile(parked, 99)),
        "resume_rate": size / (last - first),
        "resume_next_p50_ms": ms(percentile(next_event, 50)),
        "resume_next_p99_ms": ms(percentile(next_event, 99)),
        "resume_finished_p50_ms": ms(percentile(finished, 50)),
        "resume_finished_p99_ms": ms(percentile(finished, 99)),
    }


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
