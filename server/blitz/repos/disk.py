"""The file work around git: how much a clone takes on disk, and putting a workspace back
to empty when a clone fails.

Both walk without following a link: a link the repository checked out is counted as a
link and removed as a link, never what it points at. Both block; callers run them off the
event loop (`asyncio.to_thread`: a walk of a large checkout can outlast the workspace
file calls' bound, and it is over folders Blitz made itself).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["empty_folder", "is_empty", "remove_tree", "tree_size"]


def tree_size(paths: Iterable[Path], *, stop_at: int) -> int:
    """Bytes the files under `paths` take (their sizes, and their blocks when sparse
    files would hide more), summed until it passes `stop_at`; missing paths count 0."""
    total = 0
    stack = [str(p) for p in paths]
    while stack:
        top = stack.pop()
        try:
            entries = os.scandir(top)
        except OSError:  # gone, not a folder, not readable: nothing to count
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(st.st_size, st.st_blocks * 512)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                if total > stop_at:
                    return total
    return total


def is_empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def empty_folder(folder: Path) -> None:
    """Remove everything in `folder`, leaving the folder itself."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def remove_tree(path: Path) -> None:
    """Remove a file or a folder of Blitz's own, whichever `path` is, if it is there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
