"""Run one scenario in this process: `python -m bench.scenarios NAME OPTIONS.json OUT.json`.

`python -m bench` starts this once per scenario, so that each measuring client is a fresh
process: one scenario's client state (channels, memory, threads) never weighs on the
next. OPTIONS.json holds the parsed options; the `Result` is written to OUT.json.
SIGTERM (or Ctrl-C) cancels the scenario, whose `async with` blocks then stop the servers
it started, so none outlives it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

import uvloop

from bench.results import Result
from bench.scenarios import SCENARIOS


async def _cancellable(name: str, options: argparse.Namespace) -> Result:
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    result: Result = await SCENARIOS[name].run(options)
    return result


def main() -> None:
    name, options_path, out_path = sys.argv[1:4]
    options = argparse.Namespace(**json.loads(Path(options_path).read_text()))
    try:
        result = uvloop.run(_cancellable(name, options))
    except asyncio.CancelledError:
        sys.exit(f"{name}: stopped; its servers were stopped too")
    Path(out_path).write_text(json.dumps(result.to_json(), indent=1))


if __name__ == "__main__":
    main()
