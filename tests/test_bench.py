"""The benchmark harness runs end to end at tiny sizes, and every figure comes out.

Only that figures exist and are numbers: the timings of a test run mean nothing (the
machine is shared), and `make bench` is where they are taken.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from support.postgres import why_unavailable

ROOT = Path(__file__).resolve().parents[1]


def test_a_tiny_bench_run_reports_every_figure(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "sessions",
            "start",
            "--sessions",
            "3",
            "--new-turns",
            "3",
            "--channels",
            "2",
            "--start-runs",
            "1",
            "--no-plot",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["failed"] == []
    assert set(report["results"]) == {"sessions", "start"}
    figures = [f for result in report["results"].values() for f in result["figures"]]
    assert {f["key"] for f in figures} >= {
        "sessions.park_cpu_ms",
        "sessions.resume_cpu_ms",
        "sessions.decide_next_p99_ms",
        "sessions.new_accepted_p99_ms",
        "sessions.burst_rate",
        "start.median_s",
    }
    unmeasured = [f["key"] for f in figures if f["value"] is None or math.isnan(f["value"])]
    assert unmeasured == []
    assert "server CPU per turn, RunTurn to parked" in run.stdout  # the table was printed


@pytest.mark.skipif(bool(why_unavailable()), reason=why_unavailable() or "-")
def test_the_replicas_scenario_runs_on_every_setup(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench", "replicas", "--replica-sessions", "4",
         "--replica-streams", "2", "--no-plot", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    rows = report["results"]["replicas"]["rows"]
    assert [row["setup"] for row in rows] == ["sqlite", "postgres", "two", "workers"]
    assert [row["servers"] for row in rows] == [1, 1, 2, 1]  # workers: one server, two processes
    assert all(row["failed_turns"] == 0 and row["lost_deltas"] == 0 for row in rows)
    assert rows[2]["db_cpu_ms"] > 0, "the database's own CPU is read"


def test_the_webhooks_scenario_reports_its_figures(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench", "webhooks", "--webhook-turns", "5", "--channels", "2",
         "--no-plot", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    figures = {f["key"]: f["value"] for f in report["results"]["webhooks"]["figures"]}
    assert figures["webhooks.delivered"] == 5, "every parked turn's approval_request arrived"
    for key in ("webhook_p50_ms", "webhook_p99_ms", "watch_p50_ms", "watch_p99_ms"):
        assert figures[f"webhooks.{key}"] > 0
