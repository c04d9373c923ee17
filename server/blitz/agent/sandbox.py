"""What a command runs inside: the strongest confinement the machine allows, and limits.

Every command the agent runs is confined by one mechanism, chosen once per process
(`isolation()`, or forced by `--command-isolation`):

- `box`: bubblewrap (`box.py`). New user, PID, IPC, UTS, mount and network namespaces; a
  read-only system, the session's workspace the only writable place, no network unless
  approved, no capability. When its shell exits, the kernel ends everything it started.
- `landlock`: where namespaces are refused (a container under Docker's default seccomp
  profile), the kernel's Landlock (Linux 5.13+, unprivileged, allowed in containers)
  restricts what the command may open the same way (`landlocked.py`): the system read
  (without the secrets and the server's own files the box covers),
  the workspace and a private temporary folder read and written (`.git` included:
  Landlock cannot take a right away below a folder it gave), nothing else; no TCP
  where the kernel has Landlock's network rules (6.7+), no signals or abstract sockets
  beyond its own where it has scopes (6.12+). It runs in its own process group with a
  marker in its environment, and whatever carries the marker when it ends is killed.
- `unconfined`: neither works. Only the process group, the marker and the limits; the
  server then serves one principal only unless the operator passes
  `--unconfined-commands` (blitz.server).

Under every mechanism a command gets rlimits (`CommandLimits`: CPU seconds, address space,
file size, processes of its user) and, where the server can make cgroups, a cgroup of
its own bounding its whole tree's processes and memory (`cgroups.py`). Nothing here runs
a command; `shell.py` does, with what `CommandSandbox.launch` gives it.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from blitz.agent.box import SECRET_PATHS, BoxSpec, bwrap_path, system_folders, within
from blitz.agent.cgroups import CommandCgroup, cgroup_roots

__all__ = [
    "MARKER_VARIABLE",
    "CommandLimits",
    "CommandSandbox",
    "Isolation",
    "Launch",
    "isolation",
    "kill_leftovers",
]

log = structlog.get_logger(__name__)

# The environment variable that marks a command's processes (where no PID namespace is).
MARKER_VARIABLE = "BLITZ_COMMAND"
# The Landlock wrapper, run by path with the server's interpreter (it imports no Blitz).
_LANDLOCKED = Path(__file__).with_name("landlocked.py")


class Isolation(enum.Enum):
    BOX = "box"
    LANDLOCK = "landlock"
    UNCONFINED = "unconfined"


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


@dataclass
class Launch:
    """How to start one command: its argv, what to set in the child if no prefix could,
    the marker its processes carry (None in a PID namespace), and its cgroup."""

    argv: list[str]
    env: dict[str, str]
    preexec_fn: Callable[[], None] | None = None
    marker: str | None = None
    cgroup: CommandCgroup | None = None
    # A private temporary folder made for it (Landlock), removed when it ends.
    tmp: Path | None = None


@dataclass(frozen=True)
class CommandSandbox:
    """Everything a command is confined by: the mechanism, its limits, what the box shows."""

    isolation: Isolation = field(default_factory=lambda: isolation())
    limits: CommandLimits = field(default_factory=CommandLimits)
    # The bound of a command's whole tree where a cgroup can be made (0: none).
    tree_processes: int = 0
    tree_memory_bytes: int = 0
    box: BoxSpec = field(default_factory=BoxSpec)

    def launch(
        self,
        command: str,
        *,
        workspace: Path,
        env: dict[str, str],
        network: bool = False,
        writable: bool = False,
        also_writable: tuple[Path, ...] = (),
    ) -> Launch:
        """How to run `command` with /bin/sh in `workspace`, confined. `network`: its
        network was approved; `writable`: it may write `.git` and `.blitz`;
        `also_writable`: folders it may write besides the workspace (an agent's home)."""
        shell = ["/bin/sh", "-c", command]
        marker = tmp = None
        if self.isolation is Isolation.BOX:
            confined = self.box.argv(
                shell,
                workspace=workspace,
                network=network,
                writable=writable,
                also_writable=also_writable,
            )
        elif self.isolation is Isolation.LANDLOCK:
            marker = uuid.uuid4().hex
            spec = _landlock_spec(workspace, network=network, writable=writable, box=self.box)
            spec["write"] = [*spec["write"], *map(str, also_writable)]  # type: ignore[misc]
            tmp = Path(str(spec["tmp"]))
            env = {**env, "TMPDIR": str(tmp)}
            confined = [sys.executable, "-I", str(_LANDLOCKED), json.dumps(spec), "--", *shell]
        else:
            marker = uuid.uuid4().hex
            confined = shell
        if marker is not None:
            env = {**env, MARKER_VARIABLE: marker}
        cgroup = None
        if cgroup_roots() and (self.tree_processes or self.tree_memory_bytes):
            cgroup = CommandCgroup(
                processes=self.tree_processes, memory_bytes=self.tree_memory_bytes
            )
        # The limits as a command prefix where prlimit exists, so that no preexec function
        # forces a fork of the whole server (see CommandLimits.prefix).
        prefix = self.limits.prefix()
        return Launch(
            argv=[*(cgroup.prefix() if cgroup else []), *(prefix or []), *confined],
            env=env,
            preexec_fn=self.limits.apply if prefix is None else None,
            marker=marker,
            cgroup=cgroup,
            tmp=tmp,
        )


def _landlock_spec(
    workspace: Path, *, network: bool, writable: bool, box: BoxSpec
) -> dict[str, object]:
    """What `landlocked.py` allows a command, as JSON-ready data."""
    tmp = workspace.parent / f".tmp-{workspace.name}-{uuid.uuid4().hex[:8]}"
    return {
        "read": _without(["/usr", *system_folders(), "/etc", *box.binds], box=box),
        "devices": ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"],
        "write": [str(workspace)],
        "tmp": str(tmp),
        "network": network,
    }


def _remove_tmp(workspace: Path) -> None:
    """The private temporary folders Landlock probes or commands of `workspace` left."""
    for tmp in workspace.parent.glob(f".tmp-{workspace.name}-*"):
        shutil.rmtree(tmp, ignore_errors=True)


def _without(roots: list[str], *, box: BoxSpec) -> list[str]:
    """`roots` with the secrets of /etc (`SECRET_PATHS`) and the server's own files
    (`box.hidden`) left out: Landlock only allows, so what the box covers is what is not
    allowed. A root that holds one of them gives way to its entries, down to the hidden
    path's folder. A link is judged by what it leads to, as Landlock follows it: a link
    to a hidden file is left out too."""
    hidden = [os.path.realpath(p) for p in (*SECRET_PATHS, *box.hidden)]
    allowed: list[str] = []
    seen: set[str] = set()

    def visit(path: str, real: str) -> None:
        if any(within(real, h) for h in hidden):
            return
        if not any(within(h, real) for h in hidden):
            # As named: a link (/etc/mtab) is followed by the command's own wrapper.
            allowed.append(path)
            return
        if real in seen:  # a link back up the tree
            return
        seen.add(real)
        try:
            with os.scandir(real) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError:
            return  # not a folder, or not ours to list: nothing of it allowed
        for entry in entries:
            visit(entry.path, os.path.realpath(entry.path) if entry.is_symlink() else entry.path)

    for root in roots:
        visit(root, os.path.realpath(root))
    return allowed


@functools.cache
def _prlimit() -> str | None:
    """util-linux's prlimit, which Debian (and the image) always has; None elsewhere."""
    return shutil.which("prlimit")


def available(mechanism: Isolation) -> bool:
    """Whether `mechanism` confines a command on this machine (tried once each)."""
    return _works(mechanism)


@functools.cache
def _works(mechanism: Isolation) -> bool:
    if mechanism is Isolation.UNCONFINED:
        return True
    if mechanism is Isolation.BOX and bwrap_path() is None:
        return False
    with tempfile.TemporaryDirectory(prefix="blitz-probe-") as folder:
        probe = Path(folder)
        if mechanism is Isolation.BOX:
            # Its own PID namespace: the shell's pid is small there.
            argv = BoxSpec().argv(
                ["/bin/sh", "-c", "test $$ -lt 10"], workspace=probe, network=False, writable=False
            )
        else:
            spec = _landlock_spec(probe, network=False, writable=False, box=BoxSpec())
            argv = [sys.executable, "-I", str(_LANDLOCKED), json.dumps(spec), "--", "/bin/true"]
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            _remove_tmp(probe)
    return done.returncode == 0


def isolation(requested: str = "auto") -> Isolation:
    """The mechanism commands run under: the strongest this machine allows (`auto`), or
    the one named, if it works here (ValueError otherwise)."""
    if requested != "auto":
        mechanism = Isolation(requested)
        if not available(mechanism):
            raise ValueError(
                f"--command-isolation {requested}: it does not work on this machine"
                " (docs/security.md says what each needs)"
            )
        return mechanism
    for mechanism in (Isolation.BOX, Isolation.LANDLOCK):
        if available(mechanism):
            return mechanism
    log.warning(
        "commands run unconfined: neither namespaces nor Landlock are allowed here;"
        " see docs/security.md",
        isolation=Isolation.UNCONFINED.value,
    )
    return Isolation.UNCONFINED


def kill_leftovers(marker: str, group: int | None = None) -> int:
    """SIGKILL every living process whose environment carries `marker` or that is in
    process group `group`; how many. Zombies are left to whoever reaps them."""
    needle = f"{MARKER_VARIABLE}={marker}\0".encode()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # stat: "pid (comm) state ppid pgrp ...", comm may hold anything but ")".
            fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
            if fields[0] == b"Z":
                continue
            if int(fields[2]) == group or needle in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError, IndexError):
            continue  # gone, or not ours to read
    return killed
