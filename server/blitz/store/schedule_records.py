"""The store's records of schedules: each schedule, and each of its firings.

Plain records as records.py's, apart because they are one idea: what the scheduler
(core/schedules) keeps. A schedule's own fields (when, what, where) travel as one
serialized `blitz.v1.Schedule`, which the store never reads; the columns are what the
scheduler finds schedules by and decides races with.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["FIRINGS_KEPT", "FiringRecord", "FiringState", "ScheduleRecord"]

# The firings a schedule keeps (its latest, by tick).
FIRINGS_KEPT = 200


@dataclass
class ScheduleRecord:
    """A schedule: whose it is, what it asks (`spec`), and the next tick it fires at."""

    id: str
    # The principal that made it, whose turns its firings are.
    owner: str
    # A serialized blitz.v1.Schedule holding what its owner asked (title, when, what,
    # where, busy, catch_up), none of the server's fields.
    spec: bytes
    # blitz.v1.ScheduleState.
    state: int
    # The next tick not yet fired or skipped (None: paused).
    next_fire: float | None
    # Where an interval's ticks are counted from: its creation, its last change of timing
    # or its last resume.
    anchor: float
    create_time: float
    update_time: float


class FiringState(enum.StrEnum):
    """Where a firing stands."""

    # Claimed by `holder`, its turn not yet started: another process takes it over once
    # its holder has been silent for a lease (`Store.take_over_firings`).
    FIRING = "firing"
    # Its turn started (or was queued).
    FIRED = "fired"
    # Its turn could not start (`error` says why).
    FAILED = "failed"


@dataclass
class FiringRecord:
    """One tick of a schedule fired, recorded once: the row's key is (schedule, tick)."""

    schedule_id: str
    tick_time: float
    # When a process took it up (or took it over).
    fire_time: float
    # "tick", "catch_up" or "run_now".
    via: str
    # The process firing it ("" once it is done).
    holder: str
    state: FiringState = FiringState.FIRING
    session_id: str = ""
    turn_id: str = ""
    # The reason and message of why its turn did not start.
    error: str = ""
