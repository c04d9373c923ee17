"""A session's diff: each file its agent's file tools changed, from before to now; and a
turn's, from its checkpoints.

The agent's write, edit and delete tools hand the core what a file held just before they
change it (`TurnIO.before_file_change`); the store keeps the first per session and path
(`Store.keep_original`). The diff compares each original with the file as it is now.
Commands the agent runs (`run_command`) can change files too, and those changes are not
covered unless a file tool touched the same file too: what is recorded is the file
tools' work, not the folder's.

A turn's diff (`turn_diff`) compares the manifests of its start and its end checkpoints
(core/files/checkpoints.py), so it holds whatever changed the files in the turn, commands
included; a file whose content a checkpoint did not keep shows as changed without its
lines, and a file that went from one path to another unchanged is a rename, as git says it.
(A session from a repository has git's own diffs: blitz.repos.)

Pure functions over the originals and a reader of the current content; nothing here
touches the store or the disk itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from blitz.core.files.manifests import FILE, LINK, Entry, Manifest, changed_paths
from blitz.size_limits import clip
from blitz.store import FileOriginal

__all__ = ["SessionDiff", "session_diff", "turn_diff", "turn_hashes"]

# The first bytes of a file that say it is binary (as git decides it).
_SNIFF = 8000


@dataclass(frozen=True)
class SessionDiff:
    diff: str
    paths: list[str]
    truncated: bool


def session_diff(
    originals: Sequence[FileOriginal],
    current: Callable[[str], bytes | None],
    *,
    limit: int,
) -> SessionDiff:
    """The unified diff of every original against `current(path)` (None: no file now),
    file by file in path order, cut at `limit` characters with a note."""
    parts: list[str] = []
    paths: list[str] = []
    for original in sorted(originals, key=lambda o: o.path):
        now = current(original.path)
        if now == original.content:
            continue
        paths.append(original.path)
        parts.append(_file_diff(original.path, original.content, now))
    whole = "".join(parts)
    cut = clip(whole, limit, what="diff")
    return SessionDiff(diff=cut, paths=paths, truncated=cut != whole)


def turn_hashes(start: Manifest, end: Manifest) -> set[str]:
    """The blobs a turn's diff reads: the kept content of every file it changed."""
    hashes = set()
    for path in changed_paths(start, end):
        for entry in (start.entries.get(path), end.entries.get(path)):
            if entry is not None and entry.kind == FILE and entry.hash:
                hashes.add(entry.hash)
    return hashes


def turn_diff(
    start: Manifest, end: Manifest, blobs: Mapping[str, bytes], *, limit: int
) -> SessionDiff:
    """What changed between a turn's start and its end, file by file in path order, in
    git's words (renames, new and deleted files, links); folders are not shown."""
    changed = sorted(changed_paths(start, end))
    gone = {p: start.entries[p] for p in changed if p not in end.entries}
    made = {p: end.entries[p] for p in changed if p not in start.entries}
    renamed: dict[str, str] = {}  # new path: old path
    by_hash = {e.hash: p for p, e in gone.items() if e.kind == FILE and e.hash}
    for path, entry in made.items():
        old = by_hash.pop(entry.hash, None) if entry.kind == FILE and entry.hash else None
        if old is not None:
            renamed[path] = old
    parts: list[str] = []
    paths: list[str] = []
    for path in changed:
        if path in renamed.values():
            continue
        old_path = renamed.get(path)
        before = start.entries.get(old_path or path)
        after = end.entries.get(path)
        text = _entry_diff(old_path or path, path, before, after, blobs)
        if text:
            paths.append(path)
            parts.append(text)
    whole = "".join(parts)
    cut = clip(whole, limit, what="diff")
    return SessionDiff(diff=cut, paths=paths, truncated=cut != whole)


def _entry_diff(
    old: str, new: str, before: Entry | None, after: Entry | None, blobs: Mapping[str, bytes]
) -> str:
    shown = [e for e in (before, after) if e is not None]
    if not shown or all(e.kind not in (FILE, LINK) for e in shown):
        return ""  # folders, fifos and the like: no lines of their own
    head = [f"diff --git a/{old} b/{new}\n"]
    if before is None and after is not None:
        head.append(f"new file mode {_git_mode(after)}\n")
    elif after is None and before is not None:
        head.append(f"deleted file mode {_git_mode(before)}\n")
    elif old != new:
        head += [f"rename from {old}\n", f"rename to {new}\n"]
    if before is not None and after is not None and old == new:
        if _git_mode(before) != _git_mode(after):
            head += [f"old mode {_git_mode(before)}\n", f"new mode {_git_mode(after)}\n"]
    old_data, new_data = _content(before, blobs), _content(after, blobs)
    if old_data is _UNKEPT or new_data is _UNKEPT:
        return "".join(head) + f"Files a/{old} and b/{new} differ (content not kept)\n"
    if old_data == new_data:
        return "".join(head) if len(head) > 1 else ""
    body = _file_diff(new, cast("bytes | None", old_data), cast("bytes | None", new_data))
    if old != new:
        body = body.replace(f"--- a/{new}\n", f"--- a/{old}\n", 1)
    return "".join(head) + body


# A file whose content its checkpoint did not keep.
_UNKEPT = object()


def _content(entry: Entry | None, blobs: Mapping[str, bytes]) -> bytes | object | None:
    if entry is None:
        return None
    if entry.kind == LINK:
        return entry.target.encode(errors="surrogateescape")
    if entry.kind != FILE:
        return None
    if not entry.hash or entry.hash not in blobs:
        return _UNKEPT
    return blobs[entry.hash]


def _git_mode(entry: Entry) -> str:
    if entry.kind == LINK:
        return "120000"
    return "100755" if entry.mode & 0o111 else "100644"


def _file_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    old_name = "/dev/null" if before is None else f"a/{path}"
    new_name = "/dev/null" if after is None else f"b/{path}"
    if _binary(before) or _binary(after):
        return f"Binary files {old_name} and {new_name} differ\n"
    lines = difflib.unified_diff(_lines(before), _lines(after), fromfile=old_name, tofile=new_name)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:_SNIFF]


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode(errors="replace").splitlines(keepends=True)
