"""`blitz` as a person or a script runs it: the real command in a subprocess against a
test server, with nothing of the shell's own BLITZ_* settings, and no COLUMNS (pytest
sets it to 80: a piped table is then as wide as its cells)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

__all__ = ["blitz", "start_blitz"]


async def start_blitz(server: Any, *args: str) -> asyncio.subprocess.Process:
    """`blitz ARGS --server <server's gRPC port>`, started, its output piped."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("BLITZ_")}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", *args, "--server", server.grpc_target,
        env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def blitz(server: Any, *args: str) -> tuple[int, str, str]:
    """Run `blitz ARGS` against `server`: exit code, stdout, stderr."""
    proc = await start_blitz(server, *args)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()
