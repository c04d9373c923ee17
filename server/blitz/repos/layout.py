"""Where a session's git data lives in the data folder, and the two small files Blitz
keeps beside git's own in it.

`DATA_DIR/SESSION.git` is a bare repository of Blitz's; `DATA_DIR/SESSION.index` the
index its commands use with the workspace as their work tree (never the workspace's own
`.git/index`). In the git folder, git ignoring them:

- `blitz.json`: the source as cloned (its URL, the ref asked for, the branch checked out,
  the origin's default branch, the start commit). A push goes to this URL, not to one a
  caller hands back.
- `blitz-turns`: one line per turn that took a snapshot, in order, `TURN BEFORE AFTER`:
  the head before the turn's first snapshot and after its last (the same when it changed
  nothing). A turn's diff, a fork at a turn and a rewind to one read it.

Refs in the bare repository: `refs/blitz/start` (the commit cloned), `refs/blitz/head`
(the newest turn's commit), `refs/blitz/turns/TURN` (a turn's commit, when it made one),
`refs/blitz/push/BRANCH` (a push prepared). Session and turn ids are checked before they
become a path or a ref.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["HEAD", "START", "Layout", "Meta", "TurnEntry", "check_id"]

START = "refs/blitz/start"
HEAD = "refs/blitz/head"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


def check_id(value: str, what: str) -> str:
    """`value` when it can be a file name and a ref component; ValueError if not."""
    if not _ID.match(value):
        raise ValueError(f"{what} {value[:80]!r} is not an id Blitz made")
    return value


@dataclass(frozen=True)
class Meta:
    url: str
    ref: str
    branch: str
    default_branch: str
    start: str


@dataclass(frozen=True)
class TurnEntry:
    turn_id: str
    before: str
    after: str


class Layout:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        # An empty folder of Blitz's: git's HOME and working directory.
        self.home = data_dir / ".home"

    def prepare(self) -> None:
        """Make the data folder and the home (0700), if missing. Blocks."""
        for folder in (self.data_dir, self.home):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def git_dir(self, session_id: str) -> Path:
        return self.data_dir / f"{check_id(session_id, 'session id')}.git"

    def index(self, session_id: str) -> Path:
        return self.data_dir / f"{check_id(session_id, 'session id')}.index"

    def scratch(self, session_id: str) -> Path:
        """A folder for what git writes as a file (a bundle), removed after each use."""
        return self.data_dir / f"{check_id(session_id, 'session id')}.tmp"

    async def meta(self, session_id: str) -> Meta:
        path = self.git_dir(session_id) / "blitz.json"
        try:
            text = await asyncio.to_thread(path.read_text, "utf-8")
        except FileNotFoundError:
            raise LookupError(f"no repository data for session {session_id}") from None
        return Meta(**json.loads(text))

    async def write_meta(self, session_id: str, meta: Meta) -> None:
        path = self.git_dir(session_id) / "blitz.json"
        await asyncio.to_thread(_replace, path, json.dumps(asdict(meta)) + "\n")

    async def turns(self, session_id: str) -> list[TurnEntry]:
        path = self.git_dir(session_id) / "blitz-turns"
        try:
            text = await asyncio.to_thread(path.read_text, "utf-8")
        except FileNotFoundError:
            return []
        entries = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 3:
                entries.append(TurnEntry(*parts))
        return entries

    async def write_turns(self, session_id: str, entries: list[TurnEntry]) -> None:
        path = self.git_dir(session_id) / "blitz-turns"
        text = "".join(f"{e.turn_id} {e.before} {e.after}\n" for e in entries)
        await asyncio.to_thread(_replace, path, text)


def _replace(path: Path, text: str) -> None:
    """Write `path` whole: a temporary file beside it renamed over it."""
    temp = path.with_name(path.name + ".new")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temp, path)
