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
    of_floor: bool = False
    """The bound is on the figure over the floor server's, in the same run."""

    def met_by(self, value: float) -> bool | None:
        """Whether `value` meets the target; None when it could not be measured."""
        if math.isnan(value):
            return None
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def __str__(self) -> str:
        return f"{'≤' if self.op == '<=' else '≥'} {self.bound:g}{'×' if self.of_floor else ''}"


_AT_MOST = "<="
_AT_LEAST = ">="

TARGETS: dict[str, Target] = {
    # Ratios to the floor (bench/floor_server.py) in the same run: server CPU per turn,
    # RunTurn to parked and Decide to finished, at most twice the floor's.
    "sessions.park_cpu_ms": Target(_AT_MOST, 2.0, of_floor=True),
    "sessions.resume_cpu_ms": Target(_AT_MOST, 2.0, of_floor=True),
    # A burst of N: RunTurn→accepted p99 at most 1.5× the floor's.
    "sessions.burst_accepted_p99_ms": Target(_AT_MOST, 1.5, of_floor=True),
    # Decides at 100/s and new turns at 50/s with N parked: both p99s at most 2× the floor's.
    "sessions.decide_next_p99_ms": Target(_AT_MOST, 2.0, of_floor=True),
    "sessions.mixed_accepted_p99_ms": Target(_AT_MOST, 2.0, of_floor=True),
    "sessions.failed_turns": Target(_AT_MOST, 0),
    # RSS per parked turn: at most 2× the floor's with its stream open, 5 KB with none.
    "parked.open_kb": Target(_AT_MOST, 2.0, of_floor=True),
    "parked.none_kb": Target(_AT_MOST, 5),
    # Server CPU per delta at most 120 µs, at 1 and 50 streams, on either transport.
    "streams.grpc_1_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.grpc_50_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.connect_1_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    "streams.connect_50_blitz_cpu_us_per_delta": Target(_AT_MOST, 120),
    # Over gRPC, 1 and 50 streams deliver at least the bare grpc.aio server's deltas/s.
    "streams.grpc_1_ratio": Target(_AT_LEAST, 1.0),
    "streams.grpc_50_ratio": Target(_AT_LEAST, 1.0),
    # Every delta arrives, whatever the case.
    "streams.*_lost_deltas": Target(_AT_MOST, 0),
    "memory.lost_deltas": Target(_AT_MOST, 0),
    # Start: at most 1.5 s.
    "start.median_s": Target(_AT_MOST, 1.5),
    # Memory under load: under 1 GB, /healthz under 100 ms.
    "memory.peak_rss_mb": Target(_AT_MOST, 1024),
    "memory.healthz_max_ms": Target(_AT_MOST, 100),
    "memory.healthz_errors": Target(_AT_MOST, 0),
    # Beside LangGraph's Agent Server (`peer`, whose figures put LangGraph's value where the
    # floor's goes): every CPU and latency figure at most 0.2× LangGraph's, and less memory
    # per parked turn (at most 1×: a target can say no stricter). Issue "Close to the floor,
    # second pass".
    "peer.park_cpu_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.resume_cpu_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.burst_accepted_p99_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.burst_parked_p99_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.resume_next_p99_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.resume_finished_p99_ms": Target(_AT_MOST, 0.2, of_floor=True),
    "peer.parked_kb": Target(_AT_MOST, 1.0, of_floor=True),
    "peer.failed_turns": Target(_AT_MOST, 0),
    "peer.langgraph_failed_turns": Target(_AT_MOST, 0),
}


def target_for(key: str) -> Target | None:
    """The target of a figure: its own entry, else the first pattern that matches it."""
    if key in TARGETS:
        return TARGETS[key]
    return next((t for pattern, t in TARGETS.items() if fnmatchcase(key, pattern)), None)
