"""What the kernel says about a server process: its CPU time and its resident memory.

Figures are of the whole process (every thread), read from /proc, so a server needs no
hook of its own to be measured. CPU time comes in clock ticks (10 ms on most Linux), so a
measured span should hold many of them: the scenarios read CPU around whole phases of
hundreds of calls, never around one call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Usage", "tree_cpu", "usage"]

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """One reading of a process. Subtract two to get what happened in between."""

    cpu: float
    """Seconds of CPU, user and system, of the process's own threads."""
    children_cpu: float
    """Seconds of CPU of its children that it has waited for (the agent's commands)."""
    rss: int
    """Resident memory now, in bytes (VmRSS)."""
    peak_rss: int
    """The most resident memory since the process started, in bytes (VmHWM)."""

    def __sub__(self, earlier: Usage) -> Usage:
        return Usage(
            cpu=self.cpu - earlier.cpu,
            children_cpu=self.children_cpu - earlier.children_cpu,
            rss=self.rss - earlier.rss,
            peak_rss=self.peak_rss - earlier.peak_rss,
        )


def usage(pid: int) -> Usage:
    """Read `/proc/PID/stat` and `/proc/PID/status` now."""
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14 to 17.
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    memory = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            memory[key] = int(value.split()[0]) * 1024  # reported in kB
    return Usage(
        cpu=(utime + stime) / _TICK,
        children_cpu=(cutime + cstime) / _TICK,
        rss=memory["VmRSS"],
        peak_rss=memory["VmHWM"],
    )


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, the children it reaped, and the children it has now.

    For a server made of processes (PostgreSQL: a postmaster and a backend for each
    connection), whose backends come and go.
    """
    own = usage(pid)
    total = own.cpu + own.children_cpu
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:  # field 4, the parent's pid
            total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def child_pids(pid: int, *, named: str) -> list[int]:
    """The processes `pid` started whose command line holds `named` (`blitz.cli`: the
    workers of a `blitz serve --workers N`)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid and named.encode() in command:
            found.append(int(stat.parent.name))
    return found
