"""Finding the processes a test started, by their command line, wherever they run.

A command may run in a PID namespace of its own, where the PID it sees is not the one
this test sees; its command line is the same in both.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["running"]


def running(*argv: str) -> list[int]:
    """The PIDs of live processes whose command line is exactly `argv`."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if cmdline == wanted and state != "Z":
            found.append(int(entry.name))
    return found
