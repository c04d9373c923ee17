"""A process in a pseudo-terminal of its own, started without forking Python.

pexpect starts its child with `pty.fork()` and runs Python in the child before `exec`. In a
test process that other tests have left threads in (gRPC's, the Connect client's), a lock
one of them held at the fork stays held in the child forever, and the parent waits on
the child's exec without end. Here the child is started by `subprocess` (no Python between
fork and exec) through `setsid --ctty`, which makes the terminal its controlling one, so
Ctrl-C and window-size changes reach it as they would from a real terminal; with SIGINT at
its default even when this process ignores it (`support.processes.interruptible`).
"""

from __future__ import annotations

import codecs
import fcntl
import os
import select
import struct
import subprocess
import termios
import time

from support.processes import interruptible

__all__ = ["PtyEOF", "PtyProcess"]


class PtyEOF(Exception):
    """The process closed its terminal (it exited)."""


class PtyProcess:
    """`argv` running in a new pseudo-terminal of `rows` by `cols`."""

    def __init__(self, argv: list[str], *, env: dict[str, str], rows: int, cols: int) -> None:
        self.fd, follower = os.openpty()
        _set_size(follower, rows, cols)
        try:
            self.process = subprocess.Popen(
                ["setsid", "--ctty", *interruptible(argv)],
                stdin=follower,
                stdout=follower,
                stderr=follower,
                env=env,
            )
        finally:
            os.close(follower)
        # Multi-byte characters may arrive split across reads; what cannot be decoded
        # (the tty drops pending output on Ctrl-C) is replaced, not an error.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read(self, timeout: float) -> str:
        """What the process wrote, waiting at most `timeout` for something; "" if nothing."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return ""
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # EIO: every copy of the terminal's other end is closed
            data = b""
        if not data:
            raise PtyEOF
        return self._decoder.decode(data)

    def send(self, text: str) -> None:
        # As pexpect does, and as a person would: not within 50 ms of what came before.
        time.sleep(0.05)
        os.write(self.fd, text.encode())

    def sendline(self, text: str = "") -> None:
        self.send(text + "\n")

    def sendintr(self) -> None:
        """Ctrl-C, as the terminal's interrupt character."""
        self.send(chr(termios.tcgetattr(self.fd)[6][termios.VINTR][0]))

    def setwinsize(self, rows: int, cols: int) -> None:
        """Resize the terminal; the kernel tells the process with SIGWINCH."""
        _set_size(self.fd, rows, cols)

    def isalive(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def close(self) -> None:
        """Kill the process if it still runs, and let go of the terminal; again is a no-op."""
        if self.isalive():
            self.process.kill()
            self.process.wait()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
