"""A snapshot of a session's workspace: its manifest, and the content no checkpoint has yet.

The walk goes through the workspace the way the file tools do (`blitz.paths.Workspace`):
folder by folder from the workspace's descriptor, never through a link. A link is recorded
with its target and not followed; a fifo, socket or device is recorded and never opened;
a file with other hard links (which may be a file outside the workspace) is recorded and
never read. `.git` folders (and `.git` files, a worktree's) are left out wherever they
are: git's own store is not a rewind's to put back.

Only what changed is read: a file whose size, mtime, inode and ctime are those of the
previous manifest keeps its hash there, unless it changed within a moment of that
manifest's walk (it may have changed again unseen, with the same stat, as git's "racy"
files may), and only content that manifest did not have is handed back to be stored.

Bounds, so that no workspace makes a checkpoint without end: past one, what is left out is
recorded as such and the manifest says so (`Manifest.partial`, and `Snapshot.limits` for
the turn's notice). Blocking file work, run off the event loop by the caller
(`blitz.offload.FILE_CALLS`); it stops at its next entry once `abandoned` is set.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from blitz import _nofollow as nofollow
from blitz.core.files.manifests import FILE, FOLDER, LINK, OTHER, Entry, Manifest, decode, encode
from blitz.paths import PathRefused, Workspace

__all__ = ["ENTRIES_MAX", "FILE_MAX", "NEW_BYTES_MAX", "Snapshot", "take_snapshot"]

# A file larger than this is recorded without its content: it cannot be put back. A
# checkpoint is a copy of what the agent may change, not a backup of big data.
FILE_MAX = 8 * 1024 * 1024
# A manifest holds at most this many entries (files, folders, links); the walk stops
# there. A manifest entry costs about a hundred bytes, and every turn reads one.
ENTRIES_MAX = 20_000
# A snapshot keeps at most this much content not kept before; later new content is
# recorded without it. What one turn may add to the store, whatever the workspace holds.
NEW_BYTES_MAX = 128 * 1024 * 1024
# Folders are walked this deep at most: each level holds a descriptor open.
DEPTH_MAX = nofollow.MAX_DEPTH
# A file changed less than this before a walk began is read again by the next one: file
# times are coarse, so a change in the same tick after the read would leave the same stat.
_RACY_NS = 2_000_000_000
# Never walked into: git's own store.
_LEFT_OUT = ".git"


@dataclass
class Snapshot:
    """A manifest (encoded), the content it names that the previous one did not have, by
    hash, and the bounds it met (for the turn's notice): "entries", "depth" and
    "unreadable" (paths left out), "bytes" (content not kept past the budget) and
    "too_large" (a file too large to keep changed or appeared)."""

    manifest: bytes
    blobs: dict[str, bytes] = field(default_factory=dict)
    limits: set[str] = field(default_factory=set)


def take_snapshot(
    root: Path,
    workspace: str,
    previous: bytes | None,
    *,
    keep: bool = True,
    abandoned: threading.Event | None = None,
) -> Snapshot:
    """Walk the workspace `workspace` under `root`, reusing the hashes of `previous` (an
    encoded manifest) for unchanged files. `keep`: hand back the new content (a stored
    checkpoint); otherwise only the manifest is wanted (a comparison with now)."""
    walk = _Walk(decode(previous) if previous else None, keep=keep, abandoned=abandoned)
    walk.visit(Workspace.named(root, workspace).folder("."), "", 0)
    partial = bool(walk.limits & {"entries", "depth", "unreadable"})
    manifest = Manifest(
        walk.entries,
        partial=partial,
        taken_ns=walk.started_ns,
        limits=tuple(sorted(walk.limits & {"entries", "depth", "unreadable"})),
    )
    return Snapshot(encode(manifest), walk.blobs, walk.limits)


class _Walk:
    def __init__(
        self, previous: Manifest | None, *, keep: bool, abandoned: threading.Event | None
    ) -> None:
        self.started_ns = time.time_ns()
        self.previous = previous.entries if previous is not None else {}
        self.trusted_before = (previous.taken_ns if previous is not None else 0) - _RACY_NS
        self.known = previous.hashes() if previous is not None else set()
        self.keep = keep
        self.abandoned = abandoned
        self.entries: dict[str, Entry] = {}
        self.blobs: dict[str, bytes] = {}
        self.limits: set[str] = set()
        self.new_bytes = 0
        self.stopped = False

    def visit(self, folder: int, prefix: str, depth: int) -> None:
        """Record what `folder` holds (the descriptor is closed at the end)."""
        try:
            for name, st in nofollow.scan(folder):
                if self.abandoned is not None and self.abandoned.is_set():
                    raise TimeoutError("the snapshot was abandoned")
                if name == _LEFT_OUT:
                    continue
                if len(self.entries) >= ENTRIES_MAX:
                    self.limits.add("entries")
                    self.stopped = True
                if self.stopped:
                    return
                rel = prefix + name
                mode = st.st_mode
                if stat.S_ISDIR(mode):
                    self.entries[rel] = Entry(FOLDER, mode=stat.S_IMODE(mode))
                    self.descend(folder, name, rel, depth)
                elif stat.S_ISLNK(mode):
                    try:
                        self.entries[rel] = Entry(LINK, target=os.readlink(name, dir_fd=folder))
                    except OSError:
                        continue  # gone since it was listed
                elif stat.S_ISREG(mode) and st.st_nlink == 1:
                    self.entries[rel] = self.file(folder, name, rel, st)
                else:
                    self.entries[rel] = _entry(OTHER, st)
        finally:
            os.close(folder)

    def descend(self, folder: int, name: str, rel: str, depth: int) -> None:
        if depth + 1 >= DEPTH_MAX:
            self.limits.add("depth")
            return
        try:
            child = nofollow.child_folder(os.dup(folder), name, rel, create=False)
        except FileNotFoundError:
            return  # gone since it was listed
        except (PathRefused, OSError):
            self.limits.add("unreadable")  # swapped for a link, or not ours to read
            return
        self.visit(child, rel + "/", depth + 1)

    def file(self, folder: int, name: str, rel: str, st: os.stat_result) -> Entry:
        before = self.previous.get(rel)
        seen = _entry(FILE, st)
        if before is not None and before.kind == FILE and _stat(before) == _stat(seen):
            if before.why == "too_large":
                return before  # as it was: said once, when it changed
            if before.hash and before.ctime_ns < self.trusted_before:
                return before  # unchanged since the previous walk: not read again
        if st.st_size > FILE_MAX:
            self.limits.add("too_large")
            return _entry(FILE, st, why="too_large")
        try:
            fd = nofollow.open_regular(folder, name, rel)
        except FileNotFoundError:
            return _entry(OTHER, st)  # gone since it was listed
        except (PathRefused, OSError):
            return _entry(FILE, st, why="unreadable")
        try:
            opened = os.fstat(fd)  # what was read, before it was read
            data = nofollow.read_all(fd, FILE_MAX + 1)
        except OSError:
            return _entry(FILE, st, why="unreadable")
        finally:
            os.close(fd)
        if len(data) > FILE_MAX:
            self.limits.add("too_large")
            return _entry(FILE, opened, why="too_large")
        digest = hashlib.sha256(data).hexdigest()
        if self.keep and digest not in self.known and digest not in self.blobs:
            if self.new_bytes + len(data) > NEW_BYTES_MAX:
                self.limits.add("bytes")
                return _entry(FILE, opened, why="over_budget")
            self.blobs[digest] = data
            self.new_bytes += len(data)
        return _entry(FILE, opened, hash=digest)


def _entry(kind: str, st: os.stat_result, *, hash: str = "", why: str = "") -> Entry:
    return Entry(
        kind,
        mode=stat.S_IMODE(st.st_mode),
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        ino=st.st_ino,
        ctime_ns=st.st_ctime_ns,
        hash=hash,
        why=why,
    )


def _stat(entry: Entry) -> tuple[int, int, int, int, int]:
    """What a file's stat says of it, by which an unchanged file is told."""
    return (entry.mode, *entry.stat_key)
