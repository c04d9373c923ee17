"""What the figures should reach: the targets of the issue "A thousand live sessions on
one process", for a 2-vCPU machine. Keyed by figure (`scenario.figure`, or a pattern of
them with `*`); a figure with no entry here is shown for information, without a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["TARGETS", "Target", "target_for"]


@dataclass(frozen=True)
class Target:
    op: str
    """"<=" (at most) or ">=" (at least)."""
    bound: float

    def met_by(self, value: float) -> bool | None:
        """Whether `value` meets the target; None when it could not be measured."""
        if math.isnan(value):
            return None
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def __str__(self) -> str:
        return f"{'≤' if self.op == '<=' else '≥'} {self.bound:g}"


_AT_MOST = "<="
_AT_LEAST = ">="

TARGETS: dict[str, Target] = {
    # Turn start to first park: at most 3 ms of server CPU.
    "sessions.park_cpu_ms": Target(_AT_MOST, 3),
    # Resume after Decide: at most 5 ms.
    "sessions.resume_cpu_ms": Target(_AT_MOST, 5),
    # With 1,000 parked and Decide at 100/s, Decide→next event p99 at most 25 ms.
    "sessions.decide_next_p99_ms": Target(_AT_MOST, 25),
    # New turns at 50/s while 1,000 are parked: →accepted p99 at most 25 ms.
    "sessions.new_accepted_p99_ms": Target(_AT_MOST, 25),
    # A burst of 1,000: all accepted within 1 s, and parked at 300 turns/s or more.
    "sessions.burst_all_accepted_ms": Target(_AT_MOST, 1000),
    "sessions.burst_rate": Target(_AT_LEAST, 300),
    "sessions.failed_turns": Target(_AT_MOST, 0),
    # RSS per parked turn: 40 KB with its stream open, 5 KB with none.
    "parked.open_kb": Target(_AT_MOST, 40),
    "parked.none_kb": Target(_AT_MOST, 5),
    # Server CPU per delta at most 120 µs, at 1 and 50 streams, on either transport.
    "streams.grpc_1_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.grpc_50_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.connect_1_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.connect_50_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    # 50 streams deliver at least 0.8× the bare grpc.aio aggregate.
    "streams.grpc_50_ratio": Target(_AT_LEAST, 0.8),
    # Every delta arrives, whatever the case.
    "streams.*_lost_deltas": Target(_AT_MOST, 0),
    "memory.lost_deltas": Target(_AT_MOST, 0),
    # Start: at most 1.5 s.
    "start.median_s": Target(_AT_MOST, 1.5),
    # Memory under load: under 1 GB, /healthz under 100 ms.
    "memory.peak_rss_mb": Target(_AT_MOST, 1024),
    "memory.healthz_max_ms": Target(_AT_MOST, 100),
    "memory.healthz_errors": Target(_AT_MOST, 0),
}


def target_for(key: str) -> Target | None:
    """The target of a figure: its own entry, else the first pattern that matches it."""
    if key in TARGETS:
        return TARGETS[key]
    return next((t for pattern, t in TARGETS.items() if fnmatchcase(key, pattern)), None)
