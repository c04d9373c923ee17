"""A session's own workspace folder: copied for a fork, removed with its session.

Blocking file work, run off the event loop by the caller (`blitz.offload.FILE_CALLS`). A
folder is opened by name without following links (`blitz.paths.Workspace.named`), and
neither the copy nor the removal ever follows one: links are copied as links (a link that
leads outside stays as useless to the agent as it was, since the agent's tools refuse it),
and anything that is not a plain file, folder or link (a fifo, a socket, a device) is
left out of a copy. Only a folder named for its session is ever removed: a named
workspace may be shared, and is left as it is.
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
) -> None:
    """Copy the workspace `source` under `root` into the new folder `target`, as it is
    now: files, folders and links, nothing else. `target` must not exist yet.

    A copy that fails, or that is `abandoned` (checked at every folder), removes what it
    had copied: no half-made folder is left behind.
    """
    src = Workspace.named(root, source).root
    dst = root / target

    def not_plain(folder: str, names: list[str]) -> set[str]:
        if abandoned is not None and abandoned.is_set():
            raise CopyAbandoned(folder)
        left_out = set()
        for name in names:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                left_out.add(name)
        return left_out

    try:
        shutil.copytree(src, dst, symlinks=True, ignore=not_plain)
    except BaseException:
        shutil.rmtree(dst, ignore_errors=True)
        raise


def remove_workspace(root: Path, name: str) -> bool:
    """Remove the workspace folder `name` under `root` and all it holds, following no
    link; whether there was one to remove."""
    try:
        folder = Workspace.named(root, name).root
    except FileNotFoundError:
        return False
    shutil.rmtree(folder)
    return True
