"""What a parked turn's driver hears from its pending requests, once none of them is open.

A resolution travels one way: `PendingRequests` (pending.py) tells its `TurnListener` (the
turn driver) with all it needs of them (`Answered`), and the driver never asks back. This
module holds only that hand-over: nothing here stores, announces or drives anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from blitz.core.requests.approvals import outcome_from_json
from blitz.ports import Resolution
from blitz.store import PendingRecord

__all__ = ["Answered", "TurnListener"]


@dataclass(frozen=True)
class Answered:
    """A parked turn none of whose requests is open any more: all the driver needs of
    them. `results` is what the agent is told of each (by request id; a withdrawn one is
    left out); `interrupted`, whether one was denied with `interrupt` (the turn is to end
    instead of resuming)."""

    results: dict[str, Resolution]
    interrupted: bool

    @classmethod
    def of(cls, requests: Sequence[PendingRecord]) -> Answered | None:
        """What the turn's requests (all of them, resolved or not) say; None while one is
        open."""
        results: dict[str, Resolution] = {}
        interrupted = False
        for p in requests:
            if p.resolution is None:
                return None
            outcome = outcome_from_json(p.request_id, p.resolution)
            interrupted = interrupted or outcome.interrupts
            if outcome.result is not None:
                results[p.request_id] = outcome.result
        return cls(results, interrupted)


class TurnListener(Protocol):
    """What the turn driver hears from here: the one way resolutions travel."""

    async def answered(self, session_id: str, turn_id: str, answered: Answered) -> None:
        """None of the parked turn's requests is open any more (its deadlines are
        disarmed): resume it with `answered`, or end it.

        Called with the session's lock held.
        """
        ...

    async def expired(self, session_id: str, turn_id: str) -> None:
        """The parked turn's deadline passed: end it."""
        ...
