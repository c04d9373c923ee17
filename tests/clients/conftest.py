"""Fixtures for the client tests: `blitz serve` as a real process, and `blitz` in a pty.

The terminal tests drive `blitz chat` in a pseudo-terminal (support/terminals.py) and wait
on it blockingly; so the server they talk to runs in its own process (as a user runs it),
not in the test's event loop.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.terminals import PtyEOF, PtyProcess

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class ServerProcess:
    """A `blitz serve` process on free ports."""

    process: subprocess.Popen[bytes]
    grpc_target: str
    http_url: str
    data_dir: Path


def client_env(**extra: str) -> dict[str, str]:
    """The environment of a client process: no BLITZ_* from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(TERM="xterm-256color", LANG="C.UTF-8", PYTHONIOENCODING="utf-8", **extra)
    return env


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[ServerProcess]:
    data_dir = tmp_path / "data"
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "blitz.cli", "serve", "--grpc-port=0", "--http-port=0",
                f"--data-dir={data_dir}", "--log-format=json", "--drain-timeout=2",
            ],
            env=client_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        serving = None
        while serving is None:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "blitz serve did not start"
            for line in log.read_text().splitlines():
                if line.startswith("{") and json.loads(line).get("event") == "serving":
                    serving = json.loads(line)
            time.sleep(0.05)
        yield ServerProcess(
            process,
            f"127.0.0.1:{serving['grpc_port']}",
            f"http://127.0.0.1:{serving['http_port']}",
            data_dir,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def blitz_env(server_process: ServerProcess) -> dict[str, str]:
    """The environment of a `blitz` client process that talks to `server_process`."""
    return client_env(BLITZ_SERVER=server_process.grpc_target)


class Terminal:
    """`blitz ARGS` in a pseudo-terminal; `screen` is everything it printed, ANSI stripped."""

    def __init__(self, args: list[str], server: ServerProcess) -> None:
        self.child = PtyProcess(
            [sys.executable, "-m", "blitz.cli", *args],
            env=client_env(BLITZ_SERVER=server.grpc_target),
            rows=50,
            cols=120,
        )
        self._raw: list[str] = []
        self._pos = 0  # where the next expect starts looking

    def expect(self, pattern: str) -> str:
        """Wait for `pattern` (a regex) in the ANSI-stripped output; what came before it."""
        # Matching on raw output would trip over colour codes, so strip as it arrives.
        deadline = time.monotonic() + 20
        while True:
            text = ANSI.sub("", "".join(self._raw))
            match = re.search(pattern, text[self._pos :])
            if match:
                before = text[self._pos : self._pos + match.start()]
                self._pos += match.end()
                return before
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{pattern!r} not seen; screen so far:\n{text}")
            try:
                self._raw.append(self.child.read(timeout=min(remaining, 0.2)))
            except PtyEOF:
                text = ANSI.sub("", "".join(self._raw))
                if re.search(pattern, text[self._pos :]):
                    continue
                raise AssertionError(f"{pattern!r} not seen before exit:\n{text}") from None

    @property
    def screen(self) -> str:
        return ANSI.sub("", "".join(self._raw))

    def prompt(self, text: str) -> None:
        """Wait for the chat's prompt, then type `text` (lines joined by continuations)."""
        self.expect(r"(?m)^› $")
        lines = text.split("\n")
        for line in lines[:-1]:
            self.child.sendline(line + "\\")
            self.expect(r"… $")
        self.child.sendline(lines[-1])

    def wait_exit(self) -> int:
        """Read what is left until the process exits; its exit status."""
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                self._raw.append(self.child.read(timeout=0.2))
        except PtyEOF:
            pass
        return self.child.wait(timeout=max(deadline - time.monotonic(), 1))

    def close(self) -> None:
        self.child.close()


@pytest.fixture
def terminal(server_process: ServerProcess) -> Iterator[Callable[[list[str]], Terminal]]:
    """A factory: `terminal(["chat"])` starts `blitz chat` against `server_process`."""
    opened: list[Terminal] = []

    def start(args: list[str]) -> Terminal:
        term = Terminal(args, server_process)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()
