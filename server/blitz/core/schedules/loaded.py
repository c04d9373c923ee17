"""The schedules the scheduler has read, each checked once, not at every tick.

A schedule's spec is parsed and its timing made (`checks.timing_of`: the cron expression
read and checked to fire at all, the time zone found) when the scheduler first meets it,
and again only when its stored spec or anchor is no longer the one it was read from: an
edit made on any process shows as a new spec, a resume or a new timing as a new anchor.
So a schedule firing every second costs one check, not one per tick. It holds nothing but
what its rows say, and at most `_KEPT` of them, the least recently used going first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from blitz.core.schedules.checks import timing_of
from blitz.core.schedules.timing import Timing
from blitz.store import ScheduleRecord
from blitz.v1 import schedules_pb2 as sc

__all__ = ["Loaded", "LoadedSchedules"]

# Schedules kept read; past it, the one least recently fired is read again when next due.
_KEPT = 4096


@dataclass(frozen=True)
class Loaded:
    """A schedule as its spec says it: what its owner asked, and its ticks."""

    spec: sc.Schedule
    timing: Timing


class LoadedSchedules:
    """Each schedule's `Loaded`, by its id, while its spec and anchor stay."""

    def __init__(self, *, kept: int = _KEPT) -> None:
        self._kept = kept
        self._known: OrderedDict[str, tuple[bytes, float, Loaded]] = OrderedDict()

    def of(self, rec: ScheduleRecord) -> Loaded:
        """`rec` read; INVALID_ARGUMENT (a BlitzError) for a spec that cannot fire, which
        `checks` refuses before anything is stored."""
        known = self._known.get(rec.id)
        if known is not None and known[0] == rec.spec and known[1] == rec.anchor:
            self._known.move_to_end(rec.id)
            return known[2]
        spec = sc.Schedule.FromString(rec.spec)
        loaded = Loaded(spec, timing_of(spec, anchor=rec.anchor))
        self._known[rec.id] = (rec.spec, rec.anchor, loaded)
        self._known.move_to_end(rec.id)
        while len(self._known) > self._kept:
            self._known.popitem(last=False)
        return loaded

    def __len__(self) -> int:
        return len(self._known)
