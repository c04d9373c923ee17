"""A manifest of a session's workspace at one moment: what each path was, and what changed.

A manifest maps each path (relative to the workspace, '/'-separated) to an `Entry`: a
folder, a regular file (the sha256 of its content, which names its blob in the store,
unless the content was not kept: too large, or past a snapshot's budget), a symbolic link
(its target, as text: a link is never followed) or anything else (a fifo, a socket, a
device, a file with other hard links, which may be a file outside the workspace), which is
recorded so that a change to it shows, and is never restored. `.git` folders are not in
it (core/files/snapshots.py). A manifest that stopped at a bound is `partial`: a path it did not
reach is neither present nor absent in it, only unknown.

What the agent changed in a turn is the difference of its start's manifest and its end's
(`changed_paths`); what a rewind to a turn puts back is each path the later turns changed,
as the manifest at that turn has it (`restoration`). Stored as zlib-compressed JSON
(`encode`, `decode`). Pure: nothing here touches the disk or the store.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "FILE",
    "FOLDER",
    "LINK",
    "OTHER",
    "UNKNOWN",
    "Entry",
    "Manifest",
    "changed_paths",
    "decode",
    "encode",
    "restoration",
]

# An entry's kind.
FOLDER, FILE, LINK, OTHER = "d", "f", "l", "o"
# Not in a partial manifest at a rewind's turn: what it was then is not known.
UNKNOWN = "?"

# Why a file's content was not kept, or a path cannot be put back, in a person's words.
_WHY = {
    "too_large": "it was larger than a checkpoint keeps",
    "over_budget": "its checkpoint had already kept as much new content as one may",
    "unreadable": "it could not be read when its checkpoint was taken",
    OTHER: "it was not a file, a folder or a link (or it had other hard links)",
    UNKNOWN: "it lies past the bounds its checkpoint stopped at",
}
# The manifest format's version.
_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One path of a manifest, as it was: its kind and what tells it apart."""

    kind: str
    # Permission bits (folders, files, others).
    mode: int = 0
    # What a file's stat said, by which an unchanged file is told without reading it.
    size: int = 0
    mtime_ns: int = 0
    ino: int = 0
    ctime_ns: int = 0
    # A file's content hash (sha256, hex): "" when its content was not kept (`why`).
    hash: str = ""
    # A link's target.
    target: str = ""
    why: str = ""

    @property
    def restorable(self) -> bool:
        return self.kind in (FOLDER, LINK) or (self.kind == FILE and bool(self.hash))

    @property
    def why_not(self) -> str:
        """Why this version cannot be put back (for one that is not `restorable`)."""
        return _WHY.get(self.why) or _WHY.get(self.kind, "it was not kept")

    def same(self, other: Entry) -> bool:
        """Whether the path holds the same thing in both: a file by its content and mode
        (by its stat when a content was not kept), a link by its target."""
        if self.kind != other.kind:
            return False
        if self.kind == LINK:
            return self.target == other.target
        if self.mode != other.mode:
            return False
        if self.kind == FOLDER:
            return True
        if self.kind == FILE and self.hash and other.hash:
            return self.hash == other.hash
        return self.stat_key == other.stat_key

    @property
    def stat_key(self) -> tuple[int, int, int, int]:
        return (self.size, self.mtime_ns, self.ino, self.ctime_ns)


@dataclass(frozen=True)
class Manifest:
    entries: Mapping[str, Entry]
    # It stopped at a bound: the paths it did not reach are unknown, not absent.
    partial: bool = False
    # When the walk that made it began (time.time_ns()): a file changed within a moment
    # of it may have changed again unseen, so the next walk reads it again.
    taken_ns: int = 0
    # Why it is partial (the bounds it stopped at), for a reader.
    limits: tuple[str, ...] = field(default=())

    def hashes(self) -> set[str]:
        return {e.hash for e in self.entries.values() if e.hash}


def encode(manifest: Manifest) -> bytes:
    rows = {
        path: [e.kind, e.mode, e.size, e.mtime_ns, e.ino, e.ctime_ns, e.hash, e.target, e.why]
        for path, e in manifest.entries.items()
    }
    body = {
        "v": _VERSION,
        "partial": manifest.partial,
        "taken_ns": manifest.taken_ns,
        "limits": list(manifest.limits),
        "entries": rows,
    }
    # ensure_ascii: a name that is not UTF-8 (kept by surrogate escapes) round-trips.
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6)


def decode(data: bytes) -> Manifest:
    body = json.loads(zlib.decompress(data))
    if body.get("v") != _VERSION:
        raise ValueError(f"unknown manifest version {body.get('v')!r}")
    entries = {path: Entry(*row) for path, row in body["entries"].items()}
    return Manifest(
        entries,
        partial=bool(body["partial"]),
        taken_ns=int(body["taken_ns"]),
        limits=tuple(body["limits"]),
    )


def changed_paths(before: Manifest, after: Manifest) -> set[str]:
    """The paths that differ between two manifests: made, changed or gone. A path that a
    partial one did not reach is not compared."""
    changed = set()
    for path in before.entries.keys() | after.entries.keys():
        old, new = before.entries.get(path), after.entries.get(path)
        if (old is None and before.partial) or (new is None and after.partial):
            continue
        if old is None or new is None or not old.same(new):
            changed.add(path)
    return changed


def restoration(
    base: bytes | None, turns: Iterable[tuple[bytes, bytes]]
) -> tuple[dict[str, Entry | None], bool]:
    """What puts back the paths that `turns` (each a start's manifest and its end's)
    changed as `base` has them: each path with its entry there (None: it did not exist
    then; UNKNOWN: `base` is partial and did not reach it). And whether any manifest
    involved was partial (some changes may then be missing)."""
    changed: set[str] = set()
    partial = False
    for start_data, end_data in turns:
        start, end = decode(start_data), decode(end_data)
        changed |= changed_paths(start, end)
        partial = partial or start.partial or end.partial
    if not changed or base is None:
        return {}, partial
    then = decode(base)
    partial = partial or then.partial
    plan: dict[str, Entry | None] = {}
    for path in changed:
        entry = then.entries.get(path)
        plan[path] = Entry(UNKNOWN) if entry is None and then.partial else entry
    return plan, partial
