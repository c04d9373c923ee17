"""The slots that bound how many turns of this process do work at once.

A run of a turn (its first run, or a resume) holds a slot until it parks or finishes; a
parked turn holds none. Past `--max-running-turns`, a run waits for a slot, and what a
new turn does then is the operator's choice (`--when-full`): it is accepted and waits,
with a notice on its stream saying so (`queue`), or RunTurn refuses it with RATE_LIMITED
and a `retry_after` (`refuse`). The wait is never silent either way.

`retry_after` is an estimate: how long runs have held a slot lately (an exponentially
weighted average) over the number of slots, the expected wait for one to come free when
they end at random, and at least half a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from blitz.errors import BlitzError, Reason

__all__ = ["RunSlots"]

# The weight of the newest run in the average of how long runs hold a slot.
_WEIGHT = 0.1
_LEAST_RETRY_S = 0.5


class RunSlots:
    """`size` slots; how long runs hold them, on average."""

    def __init__(self, size: int, *, refuse_when_full: bool = False) -> None:
        self.size = size
        self.refuse_when_full = refuse_when_full
        self._free = asyncio.Semaphore(size)
        self._held_s = 1.0

    @property
    def full(self) -> bool:
        """Whether a run would wait for a slot now."""
        return self._free.locked()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold a slot for the block (waiting for one first)."""
        async with self._free:
            since = time.monotonic()
            try:
                yield
            finally:
                held = time.monotonic() - since
                self._held_s += _WEIGHT * (held - self._held_s)

    def check_room(self) -> None:
        """Refuse a new turn while every slot is taken, if the operator chose so."""
        if self.refuse_when_full and self.full:
            retry = max(_LEAST_RETRY_S, self._held_s / self.size)
            raise BlitzError(
                Reason.RATE_LIMITED,
                f"this server runs at most {self.size} turns at once and all are busy: "
                f"try again in about {retry:.1f} s",
                {"retry_after": f"{retry:.1f}s", "limit": str(self.size)},
            )

    def waiting_notice(self) -> str:
        return (
            f"Waiting for a free slot: this server runs at most {self.size} turns at once;"
            " this one goes on when one of them parks or finishes."
        )
