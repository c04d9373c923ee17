"""Running one shell command in the workspace, bounded in time, output and environment.

The command runs in its own process group with a scrubbed environment (only what the caller
passes), stdout and stderr merged, and its output capped. While it runs, the kept output is
handed to `on_output` in whole lines (a line ends at `\n` or `\r`, whole UTF-8 characters
only), so a caller can show it live: the server masks secrets event by event, and a token
cut in two would slip through. A partial line is held until its end comes, until it holds
`LINE_HOLD` bytes, or until the command ends.

It runs inside what `sandbox.py` gives it: its box (bubblewrap's namespaces, else
Landlock, else nothing but a process group and a marker in its environment), rlimits, and
a cgroup of its own where the server can make one.

A hook's command (docs/hooks.md) is run the same way, with its input on stdin and its
stderr kept apart from its stdout (`stdin`, `errors_cap`).

It is done when its shell exits: output still arriving then is read for a moment, and
whatever the command left running in the background is killed — its group, its namespace,
its cgroup, or whatever carries its marker (it could otherwise hold the output open, and
the command, to its timeout). On timeout or cancellation the same happens, and everything is reaped
before returning or re-raising. This module must never leave a process running behind
it, nor a task of its own, nor read the server's own environment.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blitz import metrics
from blitz.agent.sandbox import CommandSandbox, Isolation, Launch, kill_leftovers

__all__ = ["LINE_HOLD", "CommandOutcome", "run_shell"]

# The most of a partial line held back from `on_output` (bytes): a line longer than this
# is handed over in pieces of at least this size.
LINE_HOLD = 4096

_READ_SIZE = 65536
# How long output is still read once the shell has exited (what it left running may write).
_DRAIN_S = 0.2
# How often a running command is checked for its exit.
_POLL_S = 0.02
# How long a command's leavings may take to be gone once it has ended (`clean_up`).
_GONE_S = 2.0


@dataclass(frozen=True)
class CommandOutcome:
    """How a command ended. `exit_code` is None when it was killed for the timeout."""

    command: str
    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool
    # What it wrote on stderr, when that was kept apart (`errors_cap`).
    errors: str = ""

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
    sandbox: CommandSandbox | None = None,
    network: bool = False,
    writable: bool = False,
    stdin: bytes | None = None,
    errors_cap: int | None = None,
) -> CommandOutcome:
    """Run `command` with /bin/sh in `cwd`, confined by `sandbox` (none: only a process
    group and a marker); keep at most `output_cap` bytes of its output. `network`: its
    network was approved; `writable`: it may write the workspace's `.git` and `.blitz`.
    `stdin`: what it reads (None: nothing); `errors_cap`: keep its stderr apart, at most
    that many bytes of it (None: merged into its output)."""
    started = time.perf_counter()
    launch = await _launched(
        functools.partial(
            (sandbox or CommandSandbox(isolation=Isolation.UNCONFINED)).launch,
            command,
            workspace=cwd,
            env=dict(env),
            network=network,
            writable=writable,
        )
    )
    try:
        # Blocking, but for the spawn only: a vfork and an exec. On the loop, not a
        # thread: a pipe made on a thread may take the number of one whose transport the
        # loop has not let go of yet.
        popen = _popen(launch, cwd=cwd, stdin=stdin is not None, split=errors_cap is not None)
        proc = await _Command.attach(popen, stdin)
    except BaseException:
        await asyncio.to_thread(clean_up, launch)
        raise
    kept = bytearray()
    truncated = False
    lines = _Lines(on_output)
    errors = bytearray()

    async def pump_errors() -> None:
        assert proc.stderr is not None and errors_cap is not None
        while chunk := await proc.stderr.read(_READ_SIZE):
            errors.extend(chunk[: max(errors_cap - len(errors), 0)])

    async def pump() -> None:
        nonlocal truncated
        while chunk := await proc.stdout.read(_READ_SIZE):
            room = output_cap - len(kept)
            if len(chunk) > room:
                truncated = True
                chunk = chunk[: max(room, 0)]
            kept.extend(chunk)
            lines.feed(chunk)
            # Past the cap we keep draining, so a chatty command is not blocked on a full
            # pipe; only its exit or the timeout ends it.

    async def pump_all() -> None:
        if proc.stderr is None:
            await pump()
            return
        await asyncio.gather(pump(), pump_errors())

    pumping = asyncio.create_task(pump_all(), name=f"command-output-{proc.pid}")
    timed_out = False
    try:
        try:
            async with asyncio.timeout(time_limit):
                await proc.wait()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(pumping), _DRAIN_S)
        except TimeoutError:
            timed_out = True
    finally:
        # Always: on timeout, on cancellation, and after the shell exited, for whatever it
        # left holding the group. Reaping must finish even when we are being cancelled.
        _kill_group(proc.pid)
        pumping.cancel()
        await _to_the_end(_reaped(proc, pumping, launch))
        proc.close()
    if not pumping.cancelled() and (failed := pumping.exception()) is not None:
        raise failed
    # The command has ended: what is held of its last line goes out now.
    lines.flush()
    ended = "timeout" if timed_out else "ok" if proc.returncode == 0 else "failed"
    metrics.command_finished(ended, time.perf_counter() - started)
    return CommandOutcome(
        command=command,
        exit_code=None if timed_out else proc.returncode,
        output=bytes(kept).decode("utf-8", errors="replace"),
        truncated=truncated,
        timed_out=timed_out,
        errors=bytes(errors).decode("utf-8", errors="replace"),
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


class _Command:
    """A started command: its pid, its output (stdout and stderr), and its exit.

    Started by `subprocess.Popen`, which spawns with vfork: the server's memory is not
    copied. (uvloop's own `subprocess_exec` forks, which cost the server 2.6 ms of CPU per
    command beside a 150 MB heap, and more with a thousand parked turns, against 0.5 here:
    `python -m bench.spawn_cost`.) Its exit is watched with a pidfd where the kernel has
    them (Linux 5.3), else by polling; the output pipe is read through the loop.
    """

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdout = stdout
        # Its stderr, when kept apart from stdout.
        self.stderr: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None
        # Its stderr's and its stdin's pipes, when it has them.
        self._pipes: list[asyncio.BaseTransport] = []
        self._exited = asyncio.get_running_loop().create_future()
        self._pidfd: int | None = None

    @classmethod
    async def attach(cls, popen: subprocess.Popen[bytes], stdin: bytes | None) -> _Command:
        """The started process's pipes on the loop, `stdin` written to it."""
        assert popen.stdout is not None
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_READ_SIZE, loop=loop)
        command = cls(popen, reader)
        try:
            command._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), popen.stdout
            )
            if popen.stderr is not None:
                errors = asyncio.StreamReader(limit=_READ_SIZE, loop=loop)
                pipe, _ = await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(errors, loop=loop), popen.stderr
                )
                command.stderr = errors
                command._pipes.append(pipe)
            if popen.stdin is not None:
                # Written as the command reads it, from memory; closed once written, so it
                # sees its end. A command that exits unread breaks the pipe: nothing more.
                writer, _ = await loop.connect_write_pipe(asyncio.Protocol, popen.stdin)
                command._pipes.append(writer)
                assert isinstance(writer, asyncio.WriteTransport) and stdin is not None
                writer.write(stdin)
                writer.close()
            command._watch(loop)
        except BaseException:
            _kill_group(popen.pid)
            popen.wait()
            command.close()
            raise
        return command

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return  # no pidfds here: `wait` polls
        loop.add_reader(self._pidfd, self._poll)

    def _poll(self) -> None:
        if self._popen.poll() is not None and not self._exited.done():
            self._exited.set_result(None)
            if self._pidfd is not None:
                asyncio.get_running_loop().remove_reader(self._pidfd)

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> None:
        """Until the shell has exited and been reaped (not until its output has ended:
        a process it left in the background may hold the pipe open)."""
        while not self._exited.done():
            self._poll()
            if self._pidfd is not None:
                await asyncio.shield(self._exited)
            else:
                await asyncio.sleep(_POLL_S)

    def close(self) -> None:
        """Let go of the pipe and the pidfd (the process is reaped)."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        elif self._popen.stdout is not None:
            self._popen.stdout.close()
        for pipe in self._pipes:
            if not pipe.is_closing():
                pipe.close()
        self._pipes.clear()
        if self._pidfd is not None:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def _popen(launch: Launch, *, cwd: Path, stdin: bool, split: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        launch.argv,
        cwd=cwd,
        env=dict(launch.env),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if split else subprocess.STDOUT,
        # Its own session, so a kill reaches every process of its group.
        start_new_session=True,
        preexec_fn=launch.preexec_fn,
    )


async def _launched(launch: Callable[[], Launch]) -> Launch:
    """`launch()` on a thread: making the command's cgroup is a mkdir in the kernel's
    cgroup file system, which takes 10-30 ms on a busy machine, and on the event loop it
    held up every session's calls (docs/benchmarks.md, bench/stalls). Cancelled meanwhile,
    it waits for the launch and removes what it made, and only then is cancelled."""
    launching = asyncio.ensure_future(asyncio.to_thread(launch))
    try:
        return await asyncio.shield(launching)
    except asyncio.CancelledError:
        await _to_the_end(_undone(launching))
        raise


async def _undone(launching: asyncio.Future[Launch]) -> None:
    try:
        made = await launching
    except Exception:
        return  # nothing was made
    await asyncio.to_thread(clean_up, made)


async def _reaped(proc: _Command, pumping: asyncio.Task[None], launch: Launch) -> None:
    """Until the killed shell is reaped, what carries its marker killed, its cgroup and
    temporary folder removed, and its output task ended."""
    await proc.wait()
    await asyncio.to_thread(clean_up, launch, proc.pid)
    await _settled(pumping)


def clean_up(launch: Launch, group: int | None = None) -> None:
    """What a command leaves once its shell is gone: marked processes, its cgroup, its
    private temporary folder. Blocking: run on a thread.

    Without a PID namespace (`launch.marker`), until nothing of its process group
    (`group`) and nothing marked is alive, for up to `_GONE_S`: a fork bomb killed once
    leaves children it forked meanwhile, which the next command would meet as its user's
    process limit ("cannot fork").
    """
    if launch.marker is not None:
        deadline = time.monotonic() + _GONE_S
        while kill_leftovers(launch.marker, group) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
    if launch.cgroup is not None:
        launch.cgroup.remove()
    if launch.tmp is not None:
        shutil.rmtree(launch.tmp, ignore_errors=True)


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
