"""Running one shell command in the workspace, bounded in time, output and environment.

The command runs in its own process group with a scrubbed environment (only what the caller
passes), stdout and stderr merged, and its output capped. While it runs, the kept output is
handed to `on_output` in whole lines (a line ends at `\n` or `\r`, whole UTF-8 characters
only), so a caller can show it live: the server masks secrets event by event, and a token
cut in two would slip through. A partial line is held until its end comes, until it holds
`LINE_HOLD` bytes, or until the command ends.

It runs inside what `sandbox.py` gives it: rlimits, and a PID namespace of its own where
the machine allows one (else a process group and a marker in its environment).

It is done when its shell exits: output still arriving then is read for a moment, and
whatever the command left running in the background is killed — its group, its namespace,
or whatever carries its marker (it could otherwise hold the output open, and the command,
to its timeout). On timeout or cancellation the same happens, and everything is reaped
before returning or re-raising. This module must never leave a process running behind
it, nor a task of its own, nor read the server's own environment.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blitz.agent.sandbox import MARKER_VARIABLE, CommandLimits, Isolation, kill_marked, wrapped

__all__ = ["LINE_HOLD", "CommandOutcome", "run_shell"]

# The most of a partial line held back from `on_output` (bytes): a line longer than this
# is handed over in pieces of at least this size.
LINE_HOLD = 4096

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
    limits: CommandLimits | None = None,
    isolation: Isolation = Isolation.PROCESS,
) -> CommandOutcome:
    """Run `command` with /bin/sh in `cwd`; keep at most `output_cap` bytes of its output."""
    marker = uuid.uuid4().hex
    # The limits as a command prefix where prlimit exists, so that no preexec function
    # forces a fork of the whole server (see CommandLimits.prefix).
    prefix = limits.prefix() if limits is not None else []
    proc = await asyncio.create_subprocess_exec(
        *(prefix or []),
        *wrapped(command, isolation),
        cwd=cwd,
        env={**env, MARKER_VARIABLE: marker},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        # Its own session, so a kill reaches every process of its group.
        start_new_session=True,
        preexec_fn=limits.apply if limits is not None and prefix is None else None,
    )
    kept = bytearray()
    truncated = False
    lines = _Lines(on_output)

    async def pump() -> None:
        nonlocal truncated
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(_READ_SIZE):
            room = output_cap - len(kept)
            if len(chunk) > room:
                truncated = True
                chunk = chunk[: max(room, 0)]
            kept.extend(chunk)
            lines.feed(chunk)
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
        marked = marker if isolation is Isolation.PROCESS else None
        await _to_the_end(_reaped(proc, pumping, marked))
    if not pumping.cancelled() and (failed := pumping.exception()) is not None:
        raise failed
    # The command has ended: what is held of its last line goes out now.
    lines.flush()
    return CommandOutcome(
        command=command,
        exit_code=None if timed_out else proc.returncode,
        output=bytes(kept).decode("utf-8", errors="replace"),
        truncated=truncated,
        timed_out=timed_out,
    )


class _Lines:
    """Hands output to `on_output` in whole lines of whole characters (see module doc)."""

    def __init__(self, on_output: Callable[[str], None] | None) -> None:
        self._on_output = on_output
        # Chunk boundaries may split a character; the decoder holds the rest for the next one.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""

    def feed(self, chunk: bytes) -> None:
        if self._on_output is None or not chunk:
            return
        text = self._held + self._decoder.decode(chunk)
        end = max(text.rfind("\n"), text.rfind("\r")) + 1
        if end:
            self._on_output(text[:end])
            text = text[end:]
        # Characters are at most four bytes: only a long hold needs measuring.
        if len(text) * 4 >= LINE_HOLD and len(text.encode()) >= LINE_HOLD:
            self._on_output(text)
            text = ""
        self._held = text

    def flush(self) -> None:
        if self._on_output is None:
            return
        text, self._held = self._held + self._decoder.decode(b"", final=True), ""
        if text:
            self._on_output(text)


async def _exit_of(proc: asyncio.subprocess.Process) -> None:
    """Until the shell has exited and been reaped.

    `proc.wait()` says so at once on uvloop, but from Python 3.12 asyncio's waits for the
    output pipe to close as well, which a process left in the background can hold open; the
    return code, set on exit, is watched beside it.
    """
    waiting = asyncio.create_task(proc.wait(), name=f"command-exit-{proc.pid}")
    try:
        while proc.returncode is None and not waiting.done():
            await asyncio.wait({waiting}, timeout=_POLL_S)
    finally:
        waiting.cancel()
        await _settled(waiting)


async def _reaped(
    proc: asyncio.subprocess.Process, pumping: asyncio.Task[None], marker: str | None
) -> None:
    """Until the killed shell is reaped, what carries `marker` killed, and its output task
    has ended."""
    await _exit_of(proc)
    if marker is not None:
        await asyncio.to_thread(kill_marked, marker)
    await _settled(pumping)


async def _to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` to its end even if we are cancelled meanwhile; then re-raise that."""
    await _settled(asyncio.create_task(work))


async def _settled(task: asyncio.Task[Any]) -> None:
    """Wait until `task` is done, through any cancellation of ours, then re-raise that.

    The task's own outcome is left in it (an exception of its own is not raised here).
    """
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = exc
    if not task.cancelled():
        # Looked at, so asyncio does not report it as never retrieved.
        task.exception()
    if cancelled is not None:
        raise cancelled


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
