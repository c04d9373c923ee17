"""A checkpoint's files: what a snapshot records and reads, and what a restoration puts
back, on a real folder; never through a link, and never a file nobody asked for."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from blitz.core.files import snapshots
from blitz.core.files.manifests import FILE, FOLDER, LINK, OTHER, Entry, changed_paths, decode
from blitz.core.files.restoring import clear, depth_order, put_back
from blitz.core.files.snapshots import take_snapshot


def snapshot(ws: Path, previous: bytes | None = None) -> snapshots.Snapshot:
    return take_snapshot(ws.parent, ws.name, previous)


def entries(snap: snapshots.Snapshot) -> dict[str, Entry]:
    return dict(decode(snap.manifest).entries)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_a_snapshot_records_files_folders_and_links_and_leaves_git_out(ws: Path, tmp_path: Path):
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: main\n")
    (ws / "sub" / ".git").mkdir(parents=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("not ours\n")
    os.symlink(outside, ws / "link")
    os.link(outside, ws / "hard.txt")
    os.mkfifo(ws / "pipe")

    snap = snapshot(ws)

    got = entries(snap)
    assert set(got) == {"src", "src/a.py", "link", "hard.txt", "pipe", "sub"}
    assert got["src"].kind == FOLDER and got["link"] == Entry(LINK, target=str(outside))
    assert got["src/a.py"].kind == FILE and got["src/a.py"].hash in snap.blobs
    assert snap.blobs[got["src/a.py"].hash] == b"print(1)\n"
    # A hard-linked file may be a file outside: recorded, never read. A fifo is never opened.
    assert got["hard.txt"].kind == OTHER and got["pipe"].kind == OTHER
    assert b"not ours\n" not in snap.blobs.values()
    assert snap.limits == set()


def test_a_later_snapshot_reads_only_what_changed(ws: Path, monkeypatch):
    (ws / "same.txt").write_text("same\n")
    (ws / "edited.txt").write_text("before\n")
    old = time.time() - 60
    for name in ("same.txt", "edited.txt"):
        os.utime(ws / name, (old, old))
    monkeypatch.setattr(snapshots, "_RACY_NS", 0)
    first = snapshot(ws)
    (ws / "edited.txt").write_text("after\n")
    read: list[str] = []
    real_open = snapshots.nofollow.open_regular

    def counting(folder: int, name: str, shown: str) -> int:
        read.append(name)
        return real_open(folder, name, shown)

    monkeypatch.setattr(snapshots.nofollow, "open_regular", counting)
    second = snapshot(ws, first.manifest)
    assert read == ["edited.txt"]
    assert list(second.blobs.values()) == [b"after\n"], "only content not kept before"
    assert changed_paths(decode(first.manifest), decode(second.manifest)) == {"edited.txt"}


def test_a_file_changed_just_before_a_snapshot_is_read_again_by_the_next(ws: Path, monkeypatch):
    (ws / "racy.txt").write_text("one\n")
    first = snapshot(ws)
    read: list[str] = []
    real_open = snapshots.nofollow.open_regular
    monkeypatch.setattr(
        snapshots.nofollow,
        "open_regular",
        lambda folder, name, shown: read.append(name) or real_open(folder, name, shown),
    )
    snapshot(ws, first.manifest)
    assert read == ["racy.txt"], "its stat alone cannot be trusted yet"


def test_past_its_bounds_a_snapshot_says_so(ws: Path, monkeypatch):
    monkeypatch.setattr(snapshots, "FILE_MAX", 4)
    monkeypatch.setattr(snapshots, "NEW_BYTES_MAX", 6)
    (ws / "a.txt").write_text("abc")
    (ws / "b.txt").write_text("defg")
    (ws / "big.txt").write_text("too large")
    snap = snapshot(ws)
    got = entries(snap)
    assert got["a.txt"].hash and got["big.txt"].why == "too_large"
    assert got["b.txt"].why == "over_budget" and not got["b.txt"].restorable
    assert snap.limits == {"too_large", "bytes"}
    assert not decode(snap.manifest).partial, "every path is there, some without content"

    monkeypatch.setattr(snapshots, "ENTRIES_MAX", 2)
    partial = decode(snapshot(ws).manifest)
    assert partial.partial and list(partial.entries) == ["a.txt", "b.txt"]


def plan_back(ws: Path, before: bytes, after: bytes) -> dict[str, Entry | None]:
    then, now = decode(before), decode(after)
    return {path: then.entries.get(path) for path in changed_paths(then, now)}


def restore(root: Path, plan: dict[str, Entry | None], blobs: dict[str, bytes]) -> dict[str, str]:
    failed = clear(root, "ws", plan)
    items = sorted(
        ((p, e) for p, e in plan.items() if e is not None and p not in failed),
        key=lambda item: depth_order(item[0]),
    )
    return failed | put_back(root, "ws", items, blobs)


def test_a_restoration_puts_each_changed_path_back_and_nothing_else(ws: Path):
    (ws / "keep").mkdir()
    (ws / "keep" / "a.txt").write_text("a\n")
    (ws / "keep" / "a.txt").chmod(0o640)
    (ws / "gone.txt").write_text("gone\n")
    os.symlink("keep/a.txt", ws / "alias")
    before = snapshot(ws)
    (ws / "keep" / "a.txt").write_text("changed\n")
    (ws / "keep" / "a.txt").chmod(0o600)
    (ws / "gone.txt").unlink()
    (ws / "alias").unlink()
    (ws / "alias").mkdir()  # a link became a folder
    (ws / "new" / "deep").mkdir(parents=True)
    (ws / "new" / "deep" / "n.txt").write_text("new\n")
    after = snapshot(ws, before.manifest)

    plan = plan_back(ws, before.manifest, after.manifest)
    assert sorted(plan) == ["alias", "gone.txt", "keep/a.txt", "new", "new/deep", "new/deep/n.txt"]
    assert restore(ws.parent, plan, before.blobs) == {}

    assert (ws / "keep" / "a.txt").read_text() == "a\n"
    assert (ws / "keep" / "a.txt").stat().st_mode & 0o777 == 0o640
    assert (ws / "gone.txt").read_text() == "gone\n"
    assert os.readlink(ws / "alias") == "keep/a.txt"
    assert not (ws / "new").exists()


def test_a_folder_that_holds_someone_elses_file_stays_and_is_said(ws: Path):
    before = snapshot(ws)
    (ws / "made").mkdir()
    (ws / "made" / "agent.txt").write_text("agent\n")
    after = snapshot(ws, before.manifest)
    (ws / "made" / "user.txt").write_text("the user's\n")  # after the turn, not its change

    failed = restore(ws.parent, plan_back(ws, before.manifest, after.manifest), before.blobs)

    assert failed == {"made": "a folder there holds other files"}
    assert not (ws / "made" / "agent.txt").exists()
    assert (ws / "made" / "user.txt").read_text() == "the user's\n"


def test_a_restoration_never_writes_through_a_link(ws: Path, tmp_path: Path):
    (ws / "docs").mkdir()
    (ws / "docs" / "a.txt").write_text("a\n")
    (ws / "file.txt").write_text("mine\n")
    before = snapshot(ws)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("outside\n")
    (ws / "file.txt").unlink()
    os.symlink(outside / "a.txt", ws / "file.txt")  # a file became a link out
    plan = plan_back(ws, before.manifest, snapshot(ws, before.manifest).manifest)
    # And the folder became a link out after the plan was made.
    (ws / "docs" / "a.txt").unlink()
    (ws / "docs").rmdir()
    os.symlink(outside, ws / "docs")
    plan["docs/a.txt"] = decode(before.manifest).entries["docs/a.txt"]

    failed = restore(ws.parent, plan, before.blobs)

    assert failed == {"docs/a.txt": "its folder is a symbolic link now"}
    assert (outside / "a.txt").read_text() == "outside\n"
    assert not (ws / "file.txt").is_symlink() and (ws / "file.txt").read_text() == "mine\n"


def test_a_version_without_its_content_is_listed_not_guessed(ws: Path):
    (ws / "a.txt").write_text("a\n")
    before = snapshot(ws)
    (ws / "a.txt").write_text("b\n")
    plan = plan_back(ws, before.manifest, snapshot(ws, before.manifest).manifest)
    failed = restore(ws.parent, plan, {})  # its blob is gone
    assert failed == {"a.txt": "its content is no longer kept"}
    assert (ws / "a.txt").read_text() == "b\n"
