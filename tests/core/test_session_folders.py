"""A fork's copy of a workspace: plain files, folders and links, and never half a folder."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from blitz.core.api.session_folders import CopyAbandoned, copy_workspace


class AbandonedAfter(threading.Event):
    """An event that is set once it has been looked at `looks` times."""

    def __init__(self, looks: int) -> None:
        super().__init__()
        self._left = looks

    def is_set(self) -> bool:
        self._left -= 1
        return self._left < 0


def make_tree(root: Path) -> None:
    for folder in ("a", "a/b", "a/b/c"):
        (root / "src" / folder).mkdir(parents=True)
        (root / "src" / folder / "f.txt").write_text(folder)
    os.symlink("/etc/passwd", root / "src" / "a" / "outside")
    os.mkfifo(root / "src" / "a" / "pipe")


def test_a_copy_keeps_files_folders_and_links_and_leaves_out_the_rest(tmp_path: Path) -> None:
    make_tree(tmp_path)
    copy_workspace(tmp_path, "src", "dst")
    assert (tmp_path / "dst" / "a" / "b" / "c" / "f.txt").read_text() == "a/b/c"
    assert os.readlink(tmp_path / "dst" / "a" / "outside") == "/etc/passwd"
    assert not (tmp_path / "dst" / "a" / "pipe").exists()


@pytest.mark.parametrize("looks", [0, 1, 2])
def test_an_abandoned_copy_leaves_nothing_behind(tmp_path: Path, looks: int) -> None:
    make_tree(tmp_path)
    with pytest.raises(CopyAbandoned):
        copy_workspace(tmp_path, "src", "dst", AbandonedAfter(looks))
    assert not (tmp_path / "dst").exists()
