"""What the serving process sets about itself once: its secrets, its heap, its `/proc` entries.

`hand_over_secrets` is called by the entry point (`blitz.cli`) before anything else, and
the others by `blitz.server.serve`, for the long-lived server process (tests that run a
server inside their own process leave their process as it is). Linux-specific calls are
no-ops elsewhere.

Secrets given on the command line (`--tokens`, an API key, a database URL with a
password) or in the environment would sit in `/proc/PID/cmdline` and `/proc/PID/environ`
for as long as the server runs. So the server re-executes itself once, at start, with
them taken out of both and handed over through a pipe it reads at once
(`BLITZ_SECRETS_FD`): the process that serves holds them in memory only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import os
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

__all__ = [
    "SECRETS_FD",
    "Handed",
    "hand_over_secrets",
    "secrets_pipe",
    "settle_heap",
    "trimming_heap",
    "undumpable",
]

# The variable naming the pipe a re-executed server reads its secrets from.
SECRETS_FD = "BLITZ_SECRETS_FD"

log = structlog.get_logger(__name__)

# The collector's first threshold (see settle_heap).
_YOUNG = 10_000
_PR_SET_DUMPABLE = 4
# How often resident memory is looked at, and by how much it must have grown since the
# last trim before a trim is worth its while (see trimming_heap).
_TRIM_EVERY = 0.25
_TRIM_GROWTH = 4 * 2**20
# Held still: moved by less than `_STILL` bytes, with the process's CPU under `_IDLE` of
# the time, for `_STILL_LOOKS` looks in a row (a burst's own pauses are shorter). A trim
# holds malloc's lock for some 10 ms on a heap of a few hundred MB: not while serving.
_STILL = 256 * 2**10
_IDLE = 0.1
_STILL_LOOKS = 2


def settle_heap() -> None:
    """Tune the garbage collector for a long-lived server, once it is up.

    What starting made (modules, schemas, the core) lives as long as the process: frozen,
    the collector no longer walks it on every full collection. And a young generation of
    `_YOUNG` objects instead of Python's 700 collects less often: the server allocates in
    bursts (a thousand turns at once), whose objects mostly die young anyway. Together
    they took the collector from 7% of the server's CPU in a burst of turns to 1% (perf;
    docs/benchmarks.md).
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNG, older, oldest)


@contextlib.asynccontextmanager
async def trimming_heap(
    *,
    every: float = _TRIM_EVERY,
    growth: int = _TRIM_GROWTH,
    resident: Callable[[], int] | None = None,
    trim: Callable[[], object] | None = None,
    cpu: Callable[[], float] = time.process_time,
) -> AsyncIterator[None]:
    """While the block runs: after each burst, the heap's free pages back to the system.

    The allocator keeps what a burst freed (turns in flight hold some 36 KB each until
    they park, a parked one a few) for the next one; the server's resident memory stays
    near the burst's peak, whatever it holds after. So every `every` seconds resident memory
    is read, and once it has grown by `growth` since the last trim and then held still,
    the process all but idle, for two looks (the burst is over), glibc's `malloc_trim`
    runs on a thread and hands the free pages back (docs/benchmarks.md). `resident`
    (bytes), `trim` and `cpu` (the process's CPU seconds) stand in for `/proc/self/statm`,
    `malloc_trim` and `time.process_time` in tests; where `/proc` or `malloc_trim` is
    missing (not Linux, not glibc) the block runs with no trimming.
    """
    trim = trim or _malloc_trim()
    with contextlib.ExitStack() as stack:
        resident = resident or _statm_resident(stack)
        if resident is None or trim is None:
            yield
            return
        looks = _Looks(every, resident, cpu)
        task = asyncio.create_task(_trim_after_bursts(looks, growth, trim), name="trim")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _Looks:
    """Resident memory every `every` seconds, and whether the process rests."""

    def __init__(self, every: float, resident: Callable[[], int], cpu: Callable[[], float]):
        self._every, self._resident, self._cpu = every, resident, cpu
        self.resident = resident()
        self._cpu_at = cpu()
        self.still = 0  # looks in a row that found it where the last one did, and idle

    async def next(self) -> int:
        await asyncio.sleep(self._every)
        resident, used = self._resident(), self._cpu()
        idle = used - self._cpu_at < _IDLE * self._every
        moved = abs(resident - self.resident) >= _STILL
        self.still = 0 if moved or not idle else self.still + 1
        self.resident, self._cpu_at = resident, used
        return resident

    def again(self) -> int:
        """After a trim: look afresh."""
        self.resident, self._cpu_at, self.still = self._resident(), self._cpu(), 0
        return self.resident


async def _trim_after_bursts(looks: _Looks, growth: int, trim: Callable[[], object]) -> None:
    kept = looks.resident  # since the last trim, the least
    while True:
        now = await looks.next()
        kept = min(kept, now)
        if now - kept >= growth and looks.still >= _STILL_LOOKS:
            await asyncio.to_thread(trim)
            kept = looks.again()


def _statm_resident(stack: contextlib.ExitStack) -> Callable[[], int] | None:
    """This process's resident bytes, read from `/proc/self/statm` (Linux), open until
    `stack` closes."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    stack.callback(os.close, fd)
    page = os.sysconf("SC_PAGE_SIZE")
    return lambda: int(os.pread(fd, 128, 0).split()[1]) * page


def _malloc_trim() -> Callable[[], object] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    return lambda: function(0)


def undumpable() -> None:
    """Keep this process's `/proc` entries (its environment and command line, with their
    keys) from other processes of the same user: the commands the agent runs.

    Linux only; a no-op elsewhere. Root's processes can still read them: there, commands
    run in a namespace of their own (blitz.agent.sandbox).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        log.warning("cannot make the server's /proc entries private", exc_info=True)


@dataclass(frozen=True)
class Handed:
    """What the process that serves was handed: secret flag values by setting name, and
    the secret variables, to read settings from as if they were still given."""

    flags: Mapping[str, str]
    environ: Mapping[str, str]


def hand_over_secrets(
    argv: Sequence[str],
    environ: Mapping[str, str],
    *,
    flags: Mapping[str, str],
    variables: Sequence[str],
) -> Handed:
    """The secrets this process was handed by the one that re-executed it; or, when it was
    given secrets itself, re-execute it without them (this does not return then).

    `argv` is the interpreter's own command line but the interpreter itself
    (`sys.orig_argv[1:]`: `-m blitz.cli serve …`, or the `blitz` script and its
    arguments). `flags` maps each secret flag (`--tokens`) to its setting's name;
    `variables` names the secret environment variables. `--database` counts when its URL
    holds a password.
    """
    if SECRETS_FD in environ:
        return _received(environ)
    secret_flags = {**flags, "--database": "database"}
    kept_args: list[str] = []
    found: dict[str, str] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, value = arg.partition("=")
        name = secret_flags.get(flag)
        if name is None:
            kept_args.append(arg)
            i += 1
            continue
        if not eq:
            if i + 1 >= len(args):
                kept_args.append(arg)  # argparse says what is missing
                break
            value = args[i + 1]
            i += 1
        i += 1
        if name == "database" and not _has_password(value):
            kept_args += [flag, value]
            continue
        found[name] = value
    database = environ.get("BLITZ_DATABASE", "")
    hidden = [v for v in variables if environ.get(v)]
    if _has_password(database):
        hidden.append("BLITZ_DATABASE")
    if not found and not hidden:
        return Handed({}, {})
    read = secrets_pipe(Handed(found, {v: environ[v] for v in hidden}))
    if read is None:
        return Handed({}, {})
    env = {k: v for k, v in environ.items() if k not in hidden}
    env[SECRETS_FD] = str(read)
    os.execve(sys.executable, [sys.executable, *kept_args], env)
    raise AssertionError("unreachable: execve returns only by raising")  # pragma: no cover


def secrets_pipe(handed: Handed) -> int | None:
    """An inheritable pipe that holds `handed`, for a process this one starts to read
    (`SECRETS_FD`); None when there is nothing to hand, or too much for a pipe."""
    if not handed.flags and not handed.environ:
        return None
    payload = json.dumps({"flags": dict(handed.flags), "environ": dict(handed.environ)})
    if len(payload) > 60_000:  # a pipe takes at least 64 KiB without a reader
        return None
    read, write = os.pipe()
    os.write(write, payload.encode())
    os.close(write)
    os.set_inheritable(read, True)
    return read


def _received(environ: Mapping[str, str]) -> Handed:
    fd = int(environ[SECRETS_FD])
    os.environ.pop(SECRETS_FD, None)
    with os.fdopen(fd, "rb") as pipe:
        handed = json.loads(pipe.read() or b"{}")
    return Handed(dict(handed.get("flags", {})), dict(handed.get("environ", {})))


def _has_password(url: str) -> bool:
    if "://" not in url:
        return False
    try:
        return urllib.parse.urlsplit(url).password is not None
    except ValueError:
        return False
