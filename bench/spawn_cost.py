"""`python -m bench.spawn_cost`: server CPU to start one command, with the rlimits set
by `prlimit` (as Blitz does) and by a preexec function (as it did), on asyncio's loop and
on uvloop's (which `blitz serve` runs on), beside uvloop's own `subprocess_exec` (which
Blitz used until it was measured here).

A micro-benchmark of one call, `blitz.agent.shell.run_shell`, in a process holding some
150 MB of small objects, as a server with a thousand parked turns does: a fork copies
the page tables of all of it, a vfork none. Prints CPU and wall time per command for
each way, over `N` (100) `echo` commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path
from unittest import mock

import uvloop

from blitz.agent.sandbox import CommandLimits, CommandSandbox
from blitz.agent.shell import run_shell

_LIMITS = CommandLimits(cpu_seconds=10, memory_bytes=2**33, file_bytes=2**30)


async def _uvloop_spawn(count: int) -> tuple[float, float]:
    """`echo` by the loop's own subprocess_exec (on uvloop: libuv's fork)."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        proc = await asyncio.create_subprocess_exec(
            *_LIMITS.prefix() or [],
            "/bin/sh",
            "-c",
            "echo hi",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        await proc.communicate()
    return (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count


async def _per_command(count: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        await run_shell(
            "echo hi",
            cwd=Path("/tmp"),
            env={"PATH": "/usr/bin:/bin"},
            time_limit=10,
            output_cap=1000,
            sandbox=CommandSandbox(limits=_LIMITS),
        )
    return (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    ballast = [bytearray(1024) for _ in range(150_000)]  # noqa: F841  # a server's heap
    ways: dict[str, contextlib.AbstractContextManager[object]] = {
        "prlimit": contextlib.nullcontext(),
        "preexec_fn": mock.patch.object(CommandLimits, "prefix", lambda self: None),
    }
    for way, patched in ways.items():
        with patched:
            cpu, wall = asyncio.run(_per_command(count))
        _show(f"{way}, asyncio", cpu, wall)
    cpu, wall = uvloop.run(_per_command(count))
    _show("prlimit, uvloop", cpu, wall)
    cpu, wall = uvloop.run(_uvloop_spawn(count))
    _show("uvloop's subprocess_exec", cpu, wall)


def _show(way: str, cpu: float, wall: float) -> None:
    print(f"{way:>25}: {cpu * 1000:.2f} ms of server CPU, {wall * 1000:.2f} ms wall, per command")


if __name__ == "__main__":
    main()
