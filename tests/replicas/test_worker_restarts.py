"""A worker that keeps dying is started again after a growing wait, then given up, and
the server with it; a worker is told to stop once.

The watcher of `blitz/workers.py` looks after real processes here (a Python that exits at
once stands in for a worker that fails at start); its clock is passed in, so the waits are
read off the log, not slept through. The last test runs `blitz serve --workers 2` whose
workers fail at start (a `sitecustomize` makes them, and shortens the waits).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import structlog
from support.replicas import replica_env

from blitz import workers as workers_module
from blitz.process import Handed
from blitz.workers import WORKER_NUMBER, WORKER_OF, Workers, _Worker, prepare_process


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
    assert [line["restart_in_s"] for line in died] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert [line["attempt"] for line in died] == [1, 2, 3, 4, 5, 6, 7, 8]
    started = [line for line in logs if line["event"] == "worker_started"]
    assert [line["attempt"] for line in started] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert {line["number"] for line in died + started} == {1}
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


async def test_the_watcher_returns_once_a_worker_is_given_up(monkeypatch) -> None:
    """The server stops then (server.py sets its stop when the watcher returns)."""
    for name, value in (("_LOOK_EVERY", 0.01), ("_FIRST_WAIT", 0.01), ("_LONGEST_WAIT", 0.02)):
        monkeypatch.setattr(workers_module, name, value)
    workers = _dying_workers()
    workers.start()
    with structlog.testing.capture_logs() as logs:
        async with asyncio.timeout(60):
            await workers.watch()
    assert workers.given_up
    assert [line["event"] for line in logs].count("worker_given_up") == 1
    workers.wait(5)


def test_a_worker_is_told_to_stop_once_and_again_only_when_hurried(tmp_path: Path) -> None:
    """A second SIGTERM cuts a worker's drain short: the first sends one only when it got a
    second signal itself (`hurry`), however often it is told to stop."""
    told = tmp_path / "told"
    code = textwrap.dedent(
        f"""
        import pathlib, signal, sys, time
        told = pathlib.Path({str(told)!r})
        signal.signal(signal.SIGTERM, lambda *_: told.open("a").write("term\\n"))
        told.touch()
        for _ in range(60):  # three seconds, whatever signals come
            time.sleep(0.05)
        """
    )
    workers = Workers(2, ["-c", code], Handed(flags={}, environ={}), held=[])
    workers.start()

    def eventually(text: str) -> None:
        deadline = time.monotonic() + 30
        while not (told.exists() and told.read_text() == text):
            assert time.monotonic() < deadline, told.read_text() if told.exists() else "none"
            time.sleep(0.05)

    eventually("")
    workers.terminate()
    workers.terminate()
    eventually("term\n")
    workers.hurry()
    workers.wait(30)
    assert told.read_text() == "term\nterm\n"


def test_each_process_knows_its_worker_number_and_the_first_makes_the_metrics_folder() -> None:
    only = {"PROMETHEUS_MULTIPROC_DIR": "/somewhere/else"}
    assert prepare_process(1, only) is None
    assert "PROMETHEUS_MULTIPROC_DIR" not in only, "one process's metrics are its own"

    first: dict[str, str] = {"PROMETHEUS_MULTIPROC_DIR": "/somewhere/else"}
    assert prepare_process(3, first) == 0
    folder = Path(first["PROMETHEUS_MULTIPROC_DIR"])
    assert folder != Path("/somewhere/else") and folder.is_dir()
    assert not list(folder.iterdir()), "empty at start"

    worker = {**first, WORKER_OF: "123", WORKER_NUMBER: "2"}
    assert prepare_process(3, worker) == 2
    assert worker["PROMETHEUS_MULTIPROC_DIR"] == str(folder), "the first's, inherited"


@pytest.mark.processes
def test_a_server_whose_worker_keeps_failing_at_start_stops_and_exits_1(
    postgres_database: str, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import os
            if os.environ.get("BLITZ_WORKER_OF"):
                raise SystemExit(3)  # a worker that cannot start
            import blitz.workers
            blitz.workers._LOOK_EVERY = 0.05
            blitz.workers._FIRST_WAIT = 0.05
            blitz.workers._LONGEST_WAIT = 0.2
            """
        )
    )
    env = {**replica_env(), "PYTHONPATH": str(site)}
    done = subprocess.run(
        [
            sys.executable, "-m", "blitz.cli", "serve", "--workers=2", "--log-format=json",
            "--grpc-port=0", "--http-port=0", f"--data-dir={tmp_path / 'data'}",
            f"--database={postgres_database}", "--drain-timeout=2",
        ],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    events = [line["event"] for line in lines]
    assert events.count("worker_died") == 8
    assert events.count("worker_given_up") == 1
    assert events.index("worker_given_up") < events.index("draining") < events.index("stopped")
