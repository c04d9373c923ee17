"""What a command runs inside: resource limits, and how far it is kept from the server.

Every command gets rlimits (`CommandLimits`): CPU seconds, address space, file size, and the
processes its user may have. How it is isolated is detected once per process
(`isolation()`):

- `namespace`: the command runs in a PID and mount namespace of its own (`unshare`, as
  root or where user namespaces are allowed). It sees only its own processes — not the
  server's, so not the server's environment or command line under `/proc` — and when its
  shell exits, the kernel ends every process it started, `setsid` ones included.
- `process`: where namespaces are not allowed (a container's default seccomp profile, for
  one). The command runs in its own process group, carrying a marker in its environment,
  and whatever still carries the marker when the command ends is killed. The server makes
  itself undumpable at start (`blitz.server`), so that a command running as the same
  non-root user cannot read the server's `/proc` entries. A process that drops its
  environment escapes the marker: the container is the boundary there (docs/security.md).

Nothing here runs a command; `shell.py` does, with what this module gives it.
"""

from __future__ import annotations

import enum
import functools
import os
import resource
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import structlog

__all__ = ["MARKER_VARIABLE", "CommandLimits", "Isolation", "isolation", "kill_marked", "wrapped"]

log = structlog.get_logger(__name__)

# The environment variable that marks a command's processes (process isolation).
MARKER_VARIABLE = "BLITZ_COMMAND"


@dataclass(frozen=True)
class CommandLimits:
    """rlimits for a command and everything it starts; 0 leaves one as it is."""

    cpu_seconds: int = 0
    memory_bytes: int = 0
    file_bytes: int = 0
    # Counted over every process of the user the server runs as (the kernel's rule).
    processes: int = 0

    def _limits(self) -> list[tuple[int, str, int]]:
        return [
            (kind, flag, value)
            for kind, flag, value in (
                (resource.RLIMIT_CPU, "--cpu", self.cpu_seconds),
                (resource.RLIMIT_AS, "--as", self.memory_bytes),
                (resource.RLIMIT_FSIZE, "--fsize", self.file_bytes),
                (resource.RLIMIT_NPROC, "--nproc", self.processes),
            )
            if value > 0
        ]

    def apply(self) -> None:
        """Set the limits in the calling process: run in the child, before it execs."""
        for kind, _, value in self._limits():
            resource.setrlimit(kind, (value, value))

    def prefix(self) -> list[str] | None:
        """The argv prefix that sets the limits (`prlimit`), or None where there is none.

        Setting them this way, rather than with `apply` as a preexec_fn, lets the server
        start a command with vfork instead of a fork of its whole address space: a preexec
        function makes CPython fork, which costs milliseconds of the event loop's time per
        command in a server of a hundred megabytes or more (docs/benchmarks.md).
        """
        limits = self._limits()
        if not limits:
            return []
        tool = _prlimit()
        if tool is None:
            return None
        return [tool, *(f"{flag}={value}" for _, flag, value in limits), "--"]


@functools.cache
def _prlimit() -> str | None:
    """util-linux's prlimit, which Debian (and the image) always has; None elsewhere."""
    return shutil.which("prlimit")


class Isolation(enum.Enum):
    NAMESPACE = "namespace"
    PROCESS = "process"


def _namespace_prefix() -> list[str]:
    prefix = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    return prefix


@functools.cache
def isolation() -> Isolation:
    """The strongest isolation this machine allows commands (checked once)."""
    if shutil.which("unshare") is not None:
        try:
            probe = subprocess.run(
                [*_namespace_prefix(), "/bin/sh", "-c", "test $$ = 1"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=False,
            )
            if probe.returncode == 0:
                return Isolation.NAMESPACE
        except (OSError, subprocess.SubprocessError):
            pass
    log.warning(
        "commands run without a namespace of their own; see docs/security.md",
        isolation=Isolation.PROCESS.value,
    )
    return Isolation.PROCESS


def wrapped(command: str, how: Isolation) -> list[str]:
    """The argv that runs `command` with /bin/sh under `how`."""
    shell = ["/bin/sh", "-c", command]
    return [*_namespace_prefix(), *shell] if how is Isolation.NAMESPACE else shell


def kill_marked(marker: str) -> int:
    """SIGKILL every process whose environment carries `marker`; how many."""
    needle = f"{MARKER_VARIABLE}={marker}\0".encode()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError):
            continue  # gone, or not ours to read
    return killed
