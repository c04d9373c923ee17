"""Running one shell command in the workspace, bounded in time, output and environment.

The command runs in its own process group with a scrubbed environment (only what the caller
passes), stdout and stderr merged, and its output capped. While it runs, each piece of the
kept output is handed to `on_output` (whole UTF-8 characters only), so a caller can show it
live.

It is done when its shell exits: output still arriving then is read for a moment, and
whatever the command left running in the background is killed with the rest of its group
(it could otherwise hold the output open, and the command, to its timeout). On timeout or
cancellation the whole group is killed and reaped before returning or re-raising. This
module must never leave a process running behind it (one that starts a session of its own
with `setsid` is beyond a group kill), nor read the server's own environment.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CommandOutcome", "run_shell"]

_READ_SIZE = 65536
# How long output is still read once the shell has exited (what it left running may write).
_DRAIN_S = 0.2
# How often a running command is checked for its exit.
_POLL_S = 0.02


@dataclass(frozen=True)
class CommandOutcome:
    """How a command ended. `exit_code` is None when it was killed for the timeout."""

    command: str
    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool

    def as_result(self) -> dict[str, object]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "output": self.output,
            "truncated": self.truncated,
            "timed_out": self.timed_out,
        }


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    time_limit: float,
    output_cap: int,
    on_output: Callable[[str], None] | None = None,
) -> CommandOutcome:
    """Run `command` with /bin/sh in `cwd`; keep at most `output_cap` bytes of its output."""
    proc = await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        # Its own session, so a kill reaches every process the command started.
        start_new_session=True,
    )
    kept = bytearray()
    truncated = False
    # Chunk boundaries may split a character; the decoder holds the rest for the next one.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    async def pump() -> None:
        nonlocal truncated
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(_READ_SIZE):
            room = output_cap - len(kept)
            if len(chunk) > room:
                truncated = True
                chunk = chunk[: max(room, 0)]
            kept.extend(chunk)
            if on_output is not None and chunk and (text := decoder.decode(chunk)):
                on_output(text)
            # Past the cap we keep draining, so a chatty command is not blocked on a full
            # pipe; only its exit or the timeout ends it.

    pumping = asyncio.create_task(pump(), name=f"command-output-{proc.pid}")
    timed_out = False
    try:
        try:
            async with asyncio.timeout(time_limit):
                await _exit_of(proc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(pumping), _DRAIN_S)
        except TimeoutError:
            timed_out = True
    finally:
        # Always: on timeout, on cancellation, and after the shell exited, for whatever it
        # left holding the group. Reaping must finish even when we are being cancelled.
        _kill_group(proc.pid)
        pumping.cancel()
        await asyncio.shield(_exit_of(proc))
    return CommandOutcome(
        command=command,
        exit_code=None if timed_out else proc.returncode,
        output=bytes(kept).decode("utf-8", errors="replace"),
        truncated=truncated,
        timed_out=timed_out,
    )


async def _exit_of(proc: asyncio.subprocess.Process) -> None:
    """Until the shell has exited and been reaped.

    `proc.wait()` says so at once on uvloop, but from Python 3.12 asyncio's waits for the
    output pipe to close as well, which a process left in the background can hold open; the
    return code, set on exit, is watched beside it.
    """
    waiting = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None and not waiting.done():
            await asyncio.wait({waiting}, timeout=_POLL_S)
    finally:
        waiting.cancel()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
