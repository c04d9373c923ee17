"""Shared fixtures for the sandbox tests: a session's workspace, a folder outside it, traps.

Every test here drives real turns with the `demo` model through a whole core in this
process (`wire`), approving whatever is asked, and then checks that nothing outside the
workspace changed and nothing of it reached the client. `outside` is that folder: it sits
beside the server's data, where a workspace that could be widened or a tool that could be
led out would reach it.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from support.wire import Wire, decide, drive

from blitz.config import Settings
from blitz.v1 import turn_pb2 as t

__all__ = ["SECRET", "STALL", "OpenSession", "Outside", "Session", "release_fifos"]

SECRET = "the secret\n"
ONCE = t.DECISION_ONCE
# Seconds a turn of one tool call may take here before it counts as stalled.
STALL = 20.0


@dataclass
class Outside:
    """A folder outside every workspace, with a file no tool may read, write or remove."""

    folder: Path
    before: dict[str, tuple[int, bytes]]

    @property
    def secret(self) -> Path:
        return self.folder / "secret.txt"

    def untouched(self) -> bool:
        return snapshot(self.folder) == self.before


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    (folder / "sub").mkdir()
    return Outside(folder, snapshot(folder))


@dataclass
class Session:
    """One session of the in-process core, and its workspace folder on disk."""

    wire: Wire
    id: str
    workspace: Path
    # Approval requests the last `call` answered.
    asked: int = 0

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """Run one turn in which the model calls `tool` with `args`, approving every
        request; the tool's result, as the model saw it."""
        prompt = f"call {tool} {json.dumps(args)}"
        # A call that stalls is a failure of the sandbox, not a reason to hang the suite.
        async with asyncio.timeout(STALL):
            events = await drive(wire := self.wire, self.id, prompt, decide(wire, self.id, ONCE))
        assert not events[-1].finished.HasField("error"), events[-1].finished.error
        self.asked = sum(e.HasField("approval_request") for e in events)
        [result] = [e.tool_result for e in events if e.HasField("tool_result")]
        return json_format.MessageToDict(result.result)


OpenSession = Callable[[], Awaitable[Session]]


@pytest.fixture
async def open_session(wire: Wire, settings: Settings) -> AsyncIterator[OpenSession]:
    """Opens sessions of the test's core; at the end no thread stays blocked on a fifo."""

    async def open_one() -> Session:
        created = await wire.create_session()
        return Session(wire, created.id, settings.workspace_root / created.workspace)

    try:
        yield open_one
    finally:
        release_fifos(settings.workspace_root)


@pytest.fixture
async def session(open_session: OpenSession) -> Session:
    return await open_session()


def release_fifos(root: Path) -> None:
    """Open every fifo under `root` both ways, so that no thread stays blocked on one."""
    for parent, _, names in os.walk(root):
        for name in names:
            path = os.path.join(parent, name)
            if stat.S_ISFIFO(os.lstat(path).st_mode):
                os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry under `folder` without following links: its type and, for files and
    links, what they hold; equal snapshots mean nothing there was touched."""
    seen: dict[str, tuple[int, bytes]] = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(parent) / name
            st = path.lstat()
            kind = st.st_mode & 0o170000
            if path.is_symlink():
                content = os.readlink(path).encode()
            elif path.is_file():
                content = path.read_bytes()
            else:
                content = b""
            seen[str(path.relative_to(folder))] = (kind, content)
    return seen
