"""A worker that keeps dying is started again after a growing wait, then given up.

The watcher of `blitz/workers.py` looks after real processes here (a Python that exits at
once stands in for a worker that fails at start); its clock is passed in, so the waits are
read off the log, not slept through.
"""

from __future__ import annotations

import subprocess
import sys

import structlog

from blitz.process import Handed
from blitz.workers import Workers, _Worker


def _dying_workers() -> Workers:
    return Workers(2, ["-c", "raise SystemExit(3)"], Handed(flags={}, environ={}), held=[])


def _dead(number: int, started: float) -> _Worker:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    return _Worker(number, process, started=started)


def test_a_worker_that_keeps_dying_waits_longer_each_time_and_is_given_up() -> None:
    workers = _dying_workers()
    worker = _dead(1, started=0.0)
    now = 1.0
    waits: list[float] = []
    with structlog.testing.capture_logs() as logs:
        for _ in range(20):
            restarted = workers._look_after(worker, now)
            if worker.given_up:
                break
            if restarted is None:
                waits.append(worker.restart_at - now if worker.restart_at else 0.0)
                now = worker.restart_at or now
                continue
            restarted.process.wait()
            restarted.started = now
            worker = restarted
            now += 0.5
    died = [line for line in logs if line["event"] == "worker_died"]
    assert [line["restart_in_s"] for line in died] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert worker.given_up, "after eight deaths in a row it is not started again"
    assert [line["event"] for line in logs].count("worker_given_up") == 1
    assert workers._look_after(worker, now + 1000) is None


def test_a_worker_that_served_well_before_dying_starts_counting_again() -> None:
    workers = _dying_workers()
    worker = _dead(1, started=0.0)
    worker.deaths = 5
    with structlog.testing.capture_logs() as logs:
        assert workers._look_after(worker, 600.0) is None
    (died,) = [line for line in logs if line["event"] == "worker_died"]
    assert died["restart_in_s"] == 1, "served ten minutes: a first death again"
    restarted = workers._look_after(worker, 601.0)
    assert restarted is not None
    restarted.process.wait()
