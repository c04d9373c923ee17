"""The processes a test starts: made interruptible, and found by their command line.

A test that interrupts a child (Ctrl-C in its terminal, or SIGINT) needs the child to take
SIGINT as a user's shell would give it. A suite run in the background (`make test &`,
`nohup`) has SIGINT ignored, and an ignored signal stays ignored across fork and exec; Python
then installs no KeyboardInterrupt handler in the child, and the Ctrl-C does nothing.
`interruptible(argv)` runs `argv` through `env --default-signal=INT` (GNU coreutils), which
resets it and execs the command: nothing of Python runs between fork and exec (no
`preexec_fn`), and `subprocess`'s `restore_signals` resets only SIGPIPE, SIGXFZ and
SIGXFSZ.

A command may run in a PID namespace of its own, where the PID it sees is not the one
this test sees; its command line is the same in both (`running`).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["interruptible", "running"]


def interruptible(argv: list[str]) -> list[str]:
    """`argv`, started with SIGINT at its default whatever this process does with it."""
    return ["env", "--default-signal=INT", *argv]


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
