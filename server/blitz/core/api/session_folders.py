"""A session's own workspace folder: copied for a fork, removed with its session.

Blocking file work, run off the event loop by the caller (`blitz.offload.FILE_CALLS`). A
folder is opened by name without following links (`blitz.paths.Workspace.named`), and
neither the copy nor the removal ever follows one: links are copied as links (a link that
leads outside stays as useless to the agent as it was, since the agent's tools refuse it),
and anything that is not a plain file, folder or link (a fifo, a socket, a device), or a
file with other hard links (which may be a file outside the workspace, that the fork would
then read as its own), is left out of a copy, and named to the caller. Only a folder
named for its session is ever removed: a named workspace may be shared, and is left as it
is.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

from blitz.paths import Workspace

__all__ = ["CopyAbandoned", "copy_workspace", "is_own_folder", "remove_workspace"]


def is_own_folder(workspace: str, session_id: str) -> bool:
    """Whether `workspace` is the folder made for the session (its id), not a named one."""
    return workspace == session_id


class CopyAbandoned(Exception):
    """The caller stopped waiting for the copy (it took too long)."""


def copy_workspace(
    root: Path, source: str, target: str, abandoned: threading.Event | None = None
) -> list[str]:
    """Copy the workspace `source` under `root` into the new folder `target`, as it is
    now: files, folders and links, nothing else. `target` must not exist yet. Returns what
    was left out (paths relative to the workspace): special files and hard-linked ones.

    A copy that fails, or that is `abandoned` (checked at every folder), removes what it
    had copied: no half-made folder is left behind.
    """
    src = Workspace.named(root, source).root
    dst = root / target
    skipped: list[str] = []

    def not_plain(folder: str, names: list[str]) -> set[str]:
        if abandoned is not None and abandoned.is_set():
            raise CopyAbandoned(folder)
        left_out = set()
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            plain = stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)
            plain = plain or (stat.S_ISREG(st.st_mode) and st.st_nlink == 1)
            if not plain:
                left_out.add(name)
                skipped.append(os.path.relpath(os.path.join(folder, name), src))
        return left_out

    try:
        shutil.copytree(src, dst, symlinks=True, ignore=not_plain)
    except BaseException:
        shutil.rmtree(dst, ignore_errors=True)
        raise
    return sorted(skipped)


def remove_workspace(root: Path, name: str) -> bool:
    """Remove the workspace folder `name` under `root` and all it holds, following no
    link; whether there was one to remove."""
    try:
        folder = Workspace.named(root, name).root
    except FileNotFoundError:
        return False
    shutil.rmtree(folder)
    return True
