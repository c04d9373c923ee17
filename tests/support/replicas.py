"""Replicas: `blitz serve` processes sharing one PostgreSQL database and one data folder.

Each is a real process on free ports, started as an operator would, so that a test can
kill it (-9), pause it (SIGSTOP), or stop it as a deploy does (SIGTERM), and talk to it
through `open_wire` like any running server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import TYPE_CHECKING

from blitz.v1 import session_pb2 as s

if TYPE_CHECKING:
    from support.wire import Wire
from blitz.v1 import turn_pb2 as t

__all__ = ["Replica", "check_log", "contiguous", "read_until_finished", "replay", "replica_env"]

# Short leases, so that a dead replica's turns are taken over within a few seconds.
LEASE = 1.5


def replica_env() -> dict[str, str]:
    """The environment of a replica: no BLITZ_* from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(LANG="C.UTF-8")
    return env


class Replica:
    """One `blitz serve` on `database`, its data (workspaces) in `data_dir`."""

    def __init__(self, name: str, *, database: str, data_dir: Path, logs: Path) -> None:
        self.name = name
        self._database = database
        self._data_dir = data_dir
        self.log_path = logs / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.grpc_target = ""
        self.http_url = ""

    def start(self, *extra: str) -> Replica:
        """Start it and wait until it serves (its recovery done)."""
        with self.log_path.open("ab") as sink:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "blitz.cli", "serve",
                    "--grpc-port=0", "--http-port=0",
                    f"--data-dir={self._data_dir}", f"--database={self._database}",
                    f"--turn-lease={LEASE}", "--drain-timeout=3",
                    "--log-format=json", *extra,
                ],
                env=replica_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )  # fmt: skip
        started = self.log_path.stat().st_size if self.log_path.exists() else 0
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.log()
            assert time.monotonic() < deadline, f"{self.name} did not start:\n{self.log()}"
            for line in self.lines(since=started):
                if line.get("event") == "serving":
                    self.grpc_target = f"127.0.0.1:{line['grpc_port']}"
                    self.http_url = f"http://127.0.0.1:{line['http_port']}"
                    return self
            time.sleep(0.05)

    def lines(self, since: int = 0) -> list[dict[str, object]]:
        """Its JSON log lines (from byte `since`)."""
        if not self.log_path.exists():
            return []
        with self.log_path.open("rb") as log:
            log.seek(since)
            text = log.read().decode(errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """kill -9: no drain, no goodbye."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, as a deploy does; its exit status once it drained."""
        assert self.process is not None
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.stop(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def contiguous(events: list[t.TurnEvent]) -> bool:
    """Whether the events' seqs run one after another, without a gap or a repeat."""
    seqs = [e.seq for e in events]
    return seqs == list(range(seqs[0], seqs[0] + len(seqs)))


async def read_until_finished(stream: AsyncGenerator[t.TurnEvent, None]) -> list[t.TurnEvent]:
    """The stream's events up to the first `finished`; the stream is closed."""
    events = []
    try:
        async for event in stream:
            events.append(event)
            if event.HasField("finished"):
                break
    finally:
        await stream.aclose()
    return events


async def replay(wire: Wire, session_id: str) -> list[t.TurnEvent]:
    """Everything stored for the session, from seq 1."""
    return [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session_id))]


def check_log(events: list[t.TurnEvent]) -> None:
    """A session's stored log: seqs 1, 2, 3, ...; each turn accepted once and finished once."""
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "contiguous, no repeat"
    accepted = [e.turn_id for e in events if e.HasField("accepted")]
    finished = [e.turn_id for e in events if e.HasField("finished")]
    assert sorted(accepted) == sorted(finished), "every turn that started finished, once"
    assert len(set(finished)) == len(finished)
    for turn_id in finished:
        last = max(e.seq for e in events if e.turn_id == turn_id)
        ended = next(e for e in events if e.turn_id == turn_id and e.HasField("finished"))
        assert ended.seq == last, "nothing of a turn after its finished"
