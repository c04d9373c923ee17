"""`python -m bench [SCENARIO ...] [OPTIONS]`, which `make bench` runs.

Runs every scenario, or those named, one after the other, each in a client process of its
own (`python -m bench.scenarios`) beside the servers it starts. Then it prints every
figure beside its target, and the per-size tables of `sessions` and `parked`; writes it
all as JSON (`--out`/bench.json, with the machine, the load average and the commit); and
draws `--out`/bench.png (latency and RSS against sessions). A scenario that fails is
reported and the others still run; the exit status is then 1. A missed target is a
figure, not a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.report import by_size, figures_table
from bench.results import Result
from bench.scenarios import SCENARIOS, add_arguments
from bench.servers import ROOT

# Options of this runner, not handed to the scenarios.
_OWN = ("scenarios", "out", "no_plot", "scenario_timeout")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"any of {', '.join(SCENARIOS)} (default: all, in that order)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="folder for bench.json and bench.png (default bench/results)",
    )
    parser.add_argument("--no-plot", action="store_true", help="draw no plot (no matplotlib)")
    parser.add_argument(
        "--scenario-timeout",
        type=float,
        default=1800,
        help="seconds a scenario may run before it is stopped and counted failed"
        " (default 1800; 0: no limit)",
    )
    add_arguments(parser)
    return parser


def _git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def _run_one(name: str, options_path: Path, out: Path, *, limit: float) -> Result | None:
    started = time.monotonic()
    print(f"== {name}", flush=True)
    command = [sys.executable, "-m", "bench.scenarios", name, str(options_path), str(out)]
    with subprocess.Popen(command, cwd=ROOT) as child:
        try:
            code = child.wait(timeout=limit or None)
        except subprocess.TimeoutExpired:
            print(f"== {name}: still running after {limit:g} s, stopping it", flush=True)
            child.terminate()  # it stops its servers, then exits
            try:
                code = child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                code = child.wait()
    print(
        f"== {name}: {'done' if code == 0 else f'FAILED (exit {code})'}"
        f" in {time.monotonic() - started:.0f} s",
        flush=True,
    )
    if code != 0:
        return None
    return Result.from_json(json.loads(out.read_text()))


def main() -> int:
    parser = build_parser()
    args = parser.parse_args()
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    chosen = args.scenarios or list(SCENARIOS)
    options = {key: value for key, value in vars(args).items() if key not in _OWN}
    run: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_before": os.getloadavg(),
        "command": sys.argv[1:],
    }
    results: dict[str, Result] = {}
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="blitz-bench-") as tmp:
        options_path = Path(tmp) / "options.json"
        options_path.write_text(json.dumps(options))
        for name in chosen:
            result = _run_one(
                name, options_path, Path(tmp) / f"{name}.json", limit=args.scenario_timeout
            )
            if result is None:
                failed.append(name)
            else:
                results[name] = result
    run["load_average_after"] = os.getloadavg()

    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "bench.json"
    json_path.write_text(
        json.dumps(
            {
                "run": run,
                "options": options,
                "failed": failed,
                "results": {name: result.to_json() for name, result in results.items()},
            },
            indent=1,
            ensure_ascii=False,
        )
    )
    print()
    print(
        f"Blitz benchmarks, {run['date']}, {run['commit'] or 'no commit'}, {run['machine']},"
        f" load average {run['load_average_before'][0]:.2f} before"
    )
    if results:
        print(figures_table(results.values()))
    for result in results.values():
        table = by_size(result)
        if table:
            print(f"\n{result.scenario}, by size:\n{table}")
    print(f"\nresults: {json_path}")
    if not args.no_plot:
        from bench.plot import draw

        png_path = args.out / "bench.png"
        if draw(results, png_path):
            print(f"plot: {png_path}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
