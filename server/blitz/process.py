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

import ctypes
import gc
import json
import os
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

__all__ = [
    "SECRETS_FD",
    "Handed",
    "hand_over_secrets",
    "secrets_pipe",
    "settle_heap",
    "undumpable",
]

# The variable naming the pipe a re-executed server reads its secrets from.
SECRETS_FD = "BLITZ_SECRETS_FD"

log = structlog.get_logger(__name__)

# The collector's first threshold (see settle_heap).
_YOUNG = 10_000
_PR_SET_DUMPABLE = 4


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
