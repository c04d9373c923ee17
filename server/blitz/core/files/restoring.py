"""Putting workspace paths back as a checkpoint has them: the blocking half of a rewind.

A restoration is a plan (core/files/manifests.py's `restoration`): each path with the entry it
must become, or None for a path that must not exist. It runs in two passes, each through
the same path gate as the file tools (`blitz.paths.Workspace`: folder by folder from the
workspace's descriptor, never through a link, refusing `..` and names too long):

1. `clear`, deepest first: what stands at a path and must not (nothing should, or a thing
   of another kind) is removed: a file, a link (the link itself, never where it leads), a
   folder only once it is empty, so that a file someone else put in it stays;
2. `put_back`, shallowest first: each folder made, each link made with its target, each
   file written whole from its blob (a new file beside it, renamed over it, as the write
   tool does) with its permission bits (set-user and set-group bits left out).

A path that cannot be put back is returned with why, never skipped in silence: a version
whose content was not kept, a blob that does not match its hash, a folder that still holds
other files, a path through a link. Blocking file work, run off the event loop by the
caller (`blitz.offload.FILE_CALLS`); it stops at its next path once `abandoned` is set.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from blitz import _nofollow as nofollow
from blitz.core.files.manifests import FILE, FOLDER, LINK, Entry
from blitz.paths import PathRefused, Workspace, too_long

__all__ = ["clear", "depth_order", "put_back"]

# The permission bits a restored file or folder may get back.
_MODE_BITS = 0o1777


def depth_order(path: str) -> tuple[str, ...]:
    """A path's place in a walk: each folder before what it holds."""
    return tuple(path.split("/"))


def clear(
    root: Path,
    workspace: str,
    plan: Mapping[str, Entry | None],
    abandoned: threading.Event | None = None,
) -> dict[str, str]:
    """Pass 1: remove what stands where the plan wants nothing, or another kind of thing.
    The paths that could not be cleared, with why."""
    ws = Workspace.named(root, workspace)
    failed: dict[str, str] = {}
    for path in sorted(plan, key=depth_order, reverse=True):
        _check(abandoned)
        want = plan[path]
        if want is not None and not want.restorable:
            continue  # left as it is: put_back says why
        try:
            parent, name = _split(path)
            folder = ws.folder(parent)
        except (FileNotFoundError, NotADirectoryError, PathRefused):
            continue  # nothing stands there of its own (its folder, if planned, is cleared)
        except OSError as exc:
            failed[path] = _said(exc)
            continue
        try:
            try:
                st = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if want is not None and _stays(want, st, folder, name):
                continue
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=folder)
            else:
                os.unlink(name, dir_fd=folder)  # a link itself, never where it leads
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                failed[path] = "a folder there holds other files"
            else:
                failed[path] = _said(exc)
        finally:
            os.close(folder)
    return failed


def put_back(
    root: Path,
    workspace: str,
    items: Sequence[tuple[str, Entry]],
    blobs: Mapping[str, bytes],
    abandoned: threading.Event | None = None,
) -> dict[str, str]:
    """Pass 2: make each path what its entry says (in `depth_order`); the contents of
    files are `blobs`, by hash. The paths that could not be put back, with why."""
    ws = Workspace.named(root, workspace)
    failed: dict[str, str] = {}
    for path, want in items:
        _check(abandoned)
        if not want.restorable:
            failed[path] = want.why_not
            continue
        data = b""
        if want.kind == FILE:
            found = blobs.get(want.hash)
            if found is None or hashlib.sha256(found).hexdigest() != want.hash:
                failed[path] = "its content is no longer kept"
                continue
            data = found
        try:
            parent, name = _split(path)
            folder = ws.folder(parent, create=True)
        except PathRefused:
            failed[path] = "its folder is a symbolic link now"
            continue
        except NotADirectoryError:
            failed[path] = "a file stands where its folder was"
            continue
        except OSError as exc:
            failed[path] = _said(exc)
            continue
        try:
            _make(folder, name, path, want, data)
        except PathRefused as exc:
            failed[path] = str(exc)
        except OSError as exc:
            failed[path] = _said(exc)
        finally:
            os.close(folder)
    return failed


def _make(folder: int, name: str, path: str, want: Entry, data: bytes) -> None:
    mode = want.mode & _MODE_BITS
    if want.kind == FOLDER:
        try:
            os.mkdir(name, 0o700, dir_fd=folder)
        except FileExistsError:
            pass  # a folder already (clear removed anything else), or it refuses below
        fd = nofollow.child_folder(os.dup(folder), name, f"path {path!r}", create=False)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    elif want.kind == LINK:
        try:
            if os.readlink(name, dir_fd=folder) == want.target:
                return
        except OSError:
            pass
        os.symlink(want.target, name, dir_fd=folder)  # made, never followed
    else:
        nofollow.replace(folder, name, data, mode)


def _stays(want: Entry, st: os.stat_result, folder: int, name: str) -> bool:
    """Whether what stands at a path is of the kind the plan wants there (then put_back
    makes it so, in place)."""
    if want.kind == FOLDER:
        return stat.S_ISDIR(st.st_mode)
    if want.kind == FILE:
        return stat.S_ISREG(st.st_mode)
    if want.kind == LINK and stat.S_ISLNK(st.st_mode):
        return os.readlink(name, dir_fd=folder) == want.target
    return False


def _split(path: str) -> tuple[str, str]:
    """The folder a planned path is in (as `Workspace.folder` takes it) and its name."""
    if too_long(path):
        raise PathRefused(f"path {path[:40]!r}… is too long")
    parent, _, name = path.rpartition("/")
    if name in ("", ".", ".."):
        raise PathRefused(f"path {path!r} is not a path inside the workspace")
    return parent or ".", name


def _check(abandoned: threading.Event | None) -> None:
    if abandoned is not None and abandoned.is_set():
        raise TimeoutError("the restoration was abandoned")


def _said(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
