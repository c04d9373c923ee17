"""The chat's input line while a turn streams: what is typed shows under the spinner, and
Enter hands the line to the chat, which queues it as the session's next turn or steers the
running one with it (`/busy queue|steer`, `--while-busy`). The chat's client is busy
reading the turn's stream, and a Blitz client serves one thread only: `LineSender` sends
the lines with a client of its own, on a thread of its own, in the order typed.

A thread reads the terminal in cbreak mode (no echo: the line is drawn by the renderer's
live region, `Renderer.typed`), one byte at a time after `select`, so that it can stop at
once: before a request's prompt reads the terminal itself, and when the turn ends. Ctrl-C
still raises in the main thread (cbreak keeps the terminal's signals). Backspace, Ctrl-U
(clear) and Ctrl-W (a word) edit the line; a pasted line ending in a new line is sent.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from blitz_client import Blitz

__all__ = ["LineSender", "TypeAhead"]

_POLL = 0.05  # seconds between looks at whether to stop


class TypeAhead:
    """Keys typed while a turn runs; `send(line)` gets each line on Enter (on the reading
    thread: it must be quick and thread-safe)."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self._send = send
        self._buffer = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved: list[Any] | None = None
        self._escape = False  # inside an escape sequence (an arrow key, a paste's marks)

    @property
    def line(self) -> str | None:
        """What is typed so far; None when not reading (nothing to draw)."""
        return self._buffer if self._thread is not None else None

    def start(self) -> None:
        """Read keys from now on, if stdin is a terminal."""
        if self._thread is not None or not sys.stdin.isatty():
            return
        import termios
        import tty

        fd = sys.stdin.fileno()
        self._saved = termios.tcgetattr(fd)
        # TCSANOW: keys typed before this are kept.
        tty.setcbreak(fd, termios.TCSANOW)
        self._stop.clear()
        self._thread = threading.Thread(target=self._read, name="type-ahead", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop reading and give the terminal back as it was; what is typed stays."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join()
        if self._saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, self._saved)
            self._saved = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Not reading for a while (a request's prompt reads the terminal)."""
        reading = self._thread is not None
        self.stop()
        try:
            yield
        finally:
            if reading:
                self.start()

    def take(self) -> str:
        """What was typed and not sent; the buffer is emptied."""
        typed, self._buffer = self._buffer, ""
        return typed

    def _read(self) -> None:
        fd = sys.stdin.fileno()
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], _POLL)
            if not ready or self._stop.is_set():
                continue
            data = os.read(fd, 1024).decode(errors="replace")
            if not data:
                return  # end of input: the prompt after the turn will see it
            for key in data:
                self._key(key)

    def _key(self, key: str) -> None:
        if self._escape:
            # An escape sequence ends with a letter or `~` (`\x1b[A`, `\x1b[200~`).
            self._escape = not (key.isalpha() or key == "~")
        elif key in ("\r", "\n"):
            line, self._buffer = self._buffer.strip(), ""
            if line:
                self._send(line)
        elif key in ("\x7f", "\x08"):
            self._buffer = self._buffer[:-1]
        elif key == "\x15":  # Ctrl-U
            self._buffer = ""
        elif key == "\x17":  # Ctrl-W
            self._buffer = self._buffer.rstrip().rpartition(" ")[0]
            self._buffer += " " if self._buffer else ""
        elif key == "\x1b":
            self._escape = True
        elif key.isprintable():
            self._buffer += key


class LineSender:
    """Lines handed over by the type-ahead, each given to `handle` with a client of the
    sender's own (made by `connect`), one at a time, on the sender's thread."""

    def __init__(self, connect: Callable[[], Blitz], handle: Callable[[Blitz, str], None]) -> None:
        self._connect = connect
        self._handle = handle
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def send(self, line: str) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="line-sender", daemon=True)
            self._thread.start()
        self._lines.put(line)

    def wait(self) -> None:
        """Until every line handed over so far was handled."""
        self._lines.join()

    def close(self) -> None:
        if self._thread is not None:
            self._lines.put(None)
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        with self._connect() as client:
            while True:
                line = self._lines.get()
                try:
                    if line is None:
                        return
                    self._handle(client, line)
                finally:
                    self._lines.task_done()
