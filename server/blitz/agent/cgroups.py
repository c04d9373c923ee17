"""A cgroup per command, where the machine gives one: a bound on the command's whole tree.

rlimits bound each process of a command; a fork bomb or ten processes of a gigabyte each
are bounded only as a whole. Where the server may make cgroups (root on a host, or a
delegated cgroup), each command gets one of its own beside the server's, with `pids.max`
(processes) and a memory limit (`memory.max`, or `memory.limit_in_bytes` on cgroup v1),
and its first process joins it before it runs anything (`prefix`). The cgroup is removed
once the command's processes are gone.

Where none can be made (an unprivileged user without delegation, most containers), there
is none: rlimits and the container's own limits are the bound (docs/security.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import structlog

__all__ = ["CommandCgroup", "cgroup_roots"]

log = structlog.get_logger(__name__)

_MOUNTS = Path("/sys/fs/cgroup")
# How long removing a command's cgroup waits for its last processes to be reaped.
_REMOVE_WITHIN_S = 1.0


@dataclass(frozen=True)
class _Root:
    """Where command cgroups are made for one controller set, and how limits are named."""

    path: Path
    pids: str | None  # the file of the process limit, or None here
    memory: str | None  # the file of the memory limit


@functools.cache
def cgroup_roots() -> tuple[_Root, ...]:
    """The places command cgroups can be made, checked once (empty: none can be)."""
    roots: list[_Root] = []
    own = _own_cgroups()
    unified = own.get("")
    if unified is not None and (_MOUNTS / "cgroup.controllers").exists():
        base = _MOUNTS / unified.lstrip("/")
        enabled = _read(base / "cgroup.subtree_control").split()
        if {"pids", "memory"} & set(enabled) and _writable(base):
            roots.append(
                _Root(
                    base,
                    "pids.max" if "pids" in enabled else None,
                    "memory.max" if "memory" in enabled else None,
                )
            )
        return tuple(roots)
    for controller, limit in (("pids", "pids.max"), ("memory", "memory.limit_in_bytes")):
        path = own.get(controller)
        mount = _MOUNTS / controller
        if path is None or not mount.is_dir():
            continue
        base = mount / path.lstrip("/")
        if _writable(base):
            pids = limit if controller == "pids" else None
            memory = limit if controller == "memory" else None
            roots.append(_Root(base, pids, memory))
    return tuple(roots)


class CommandCgroup:
    """One command's cgroup(s), made now; `remove` once the command has ended."""

    def __init__(self, *, processes: int, memory_bytes: int) -> None:
        name = f"blitz-command-{uuid.uuid4().hex[:12]}"
        self.procs: list[str] = []
        self._made: list[Path] = []
        for root in cgroup_roots():
            path = root.path / name
            try:
                path.mkdir()
            except OSError as exc:
                log.warning("command_cgroup_refused", path=str(path), error=exc.strerror)
                continue
            self._made.append(path)
            if root.pids and processes > 0:
                (path / root.pids).write_text(str(processes))
            if root.memory and memory_bytes > 0:
                (path / root.memory).write_text(str(memory_bytes))
                swap = path / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
            self.procs.append(str(path / "cgroup.procs"))

    def prefix(self) -> list[str]:
        """The argv prefix that puts the command's first process in its cgroups before it
        runs anything (a shell, then exec)."""
        if not self.procs:
            return []
        join = (
            'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; '
            'n=$((n - 1)); done; exec "$@"'
        )
        return ["/bin/sh", "-c", join, "sh", str(len(self.procs)), *self.procs]

    def remove(self) -> None:
        """Remove the cgroups, waiting a moment for the last processes to be reaped."""
        deadline = time.monotonic() + _REMOVE_WITHIN_S
        for path in self._made:
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        _kill_all(path)
                        with contextlib.suppress(OSError):
                            path.rmdir()
                        break
                    time.sleep(0.01)
        self._made = []


def _kill_all(path: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in _read(path / "cgroup.procs").split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), 9)


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path by controller ("" for cgroup v2's unified one)."""
    found: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            found[""] = path
        for controller in controllers.split(","):
            found.setdefault(controller, path)
    return found


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
