"""When a schedule fires: its ticks, from a cron expression in a time zone or an interval.

`Timing` is read from a `blitz.v1.Schedule` once it is checked (`checks.py`), and answers
two questions, both pure arithmetic on the epoch: the first tick after a moment, and the
last tick before one. A cron expression is croniter's, read in the schedule's IANA
time zone (zoneinfo), so "0 3 * * *" in Europe/Paris is 03:00 there, summer and winter; an
interval's ticks are `anchor + k·every`. croniter's work is bounded: an expression that
matches no date within its search (February 30th) raises once, when it is checked, and a
checked expression is never asked more than one step at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import croniter

__all__ = ["MIN_EVERY", "Timing"]

# The shortest interval, and so (with a cron's seconds) the finest tick.
MIN_EVERY = 1.0


@dataclass(frozen=True)
class Timing:
    """A schedule's ticks: `cron` (in `zone`) or `every` seconds from `anchor`."""

    cron: str = ""
    zone: str = "UTC"
    every: float = 0.0
    anchor: float = 0.0

    def _cron(self, start: float) -> croniter:
        at = datetime.fromtimestamp(start, ZoneInfo(self.zone))
        return croniter(self.cron, at, second_at_beginning=True)

    def next_after(self, moment: float) -> float:
        """The first tick strictly after `moment`."""
        if self.cron:
            # Cron ticks fall on whole seconds: the first after the second `moment` is in.
            return float(self._cron(math.floor(moment)).get_next(float))
        steps = math.floor((moment - self.anchor) / self.every) + 1
        tick = self.anchor + max(steps, 1) * self.every
        while tick <= moment:  # floating point: never a tick at or before `moment`
            tick += self.every
        return tick

    def last_before(self, moment: float) -> float | None:
        """The last tick strictly before `moment` (None: none, for an interval's first)."""
        if self.cron:
            # croniter's previous is strictly before its start, and ticks are whole seconds.
            return float(self._cron(math.ceil(moment)).get_prev(float))
        steps = math.ceil((moment - self.anchor) / self.every) - 1
        tick = self.anchor + steps * self.every
        while steps >= 1 and tick >= moment:  # floating point
            steps, tick = steps - 1, tick - self.every
        return tick if steps >= 1 else None

    def local(self, moment: float) -> datetime:
        """`moment` in the schedule's time zone (UTC for an interval without one)."""
        return datetime.fromtimestamp(moment, ZoneInfo(self.zone) if self.zone else UTC)
