"""Turn commits, diffs and exports: what a session changed, as git says it, whatever
changed it, and handed back in forms git applies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.git_servers import Executable, GitServers, entries, run_git

from blitz.repos import RepoError, Repositories, Source

SID = "s_00112233445566778899aabbccddeeff"
FORK = "s_ffeeddccbbaa99887766554433221100"
PNG = bytes([0x89, 0x50, 0x4E, 0x47, 0, 0, 0, 13, 0xFF, 0x00, 0x10]) * 20


@pytest.fixture
def origin(git_servers: GitServers) -> str:
    git_servers.make_repo(
        "app",
        {
            "README.md": "# App\n\nIt does things.\n",
            "src/main.py": "".join(f"line {i}\n" for i in range(40)),
            "src/old_name.py": "".join(f"kept {i}\n" for i in range(40)),
            "doomed.txt": "bye\n",
            "run.sh": "#!/bin/sh\necho run\n",
            "tool": Executable("#!/bin/sh\n"),
            ".gitignore": "build/\n*.log\n",
            "forced.log": "tracked although ignored\n",
        },
    )
    return git_servers.git_url("app")


@pytest.fixture
async def cloned(repos: Repositories, origin: str, workspace: Path) -> Path:
    await repos.clone(SID, Source(url=origin), workspace)
    return workspace


def change_everything(ws: Path) -> None:
    """Edits, an addition, a rename, a deletion, a binary file, a mode change, ignored
    build output, a change to a tracked file that .gitignore matches."""
    (ws / "README.md").write_text("# App\n\nIt does more things.\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "guide.md").write_text("A guide.\n")
    os.rename(ws / "src" / "old_name.py", ws / "src" / "new_name.py")
    (ws / "doomed.txt").unlink()
    (ws / "logo.png").write_bytes(PNG)
    os.chmod(ws / "run.sh", 0o755)
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_bytes(b"\x7fELF")
    (ws / "debug.log").write_text("noise\n")
    (ws / "forced.log").write_text("tracked and changed\n")


async def test_the_diff_shows_every_kind_of_change_in_git_terms(
    repos: Repositories, cloned: Path
) -> None:
    change_everything(cloned)
    got = await repos.diff(SID, cloned)
    assert not got.truncated and got.head == ""
    assert (
        got.base
        == run_git("rev-parse", "HEAD", home=cloned.parent, cwd=cloned).stdout.decode().strip()
    )
    assert "-It does things.\n+It does more things." in got.diff
    assert "new file mode 100644" in got.diff and "+A guide." in got.diff
    assert "rename from src/old_name.py\nrename to src/new_name.py" in got.diff
    assert "deleted file mode 100644" in got.diff and "-bye" in got.diff
    assert "Binary files /dev/null and b/logo.png differ" in got.diff
    assert "old mode 100644\nnew mode 100755" in got.diff
    assert "+tracked and changed" in got.diff
    assert "build/out.o" not in got.diff and "debug.log" not in got.diff
    assert sorted(got.paths) == sorted(
        [
            "README.md",
            "docs/guide.md",
            "src/new_name.py",
            "doomed.txt",
            "logo.png",
            "run.sh",
            "forced.log",
        ]
    )


async def test_nothing_in_the_workspaces_git_folder_is_part_of_a_diff(
    repos: Repositories, cloned: Path
) -> None:
    """`--work-tree` git skips every `.git` entry: what the agent writes there is not a
    change of the work tree."""
    (cloned / ".git" / "notes.txt").write_text("agent scratch\n")
    run_git("commit", "--allow-empty", "-qm", "agent commit", home=cloned.parent, cwd=cloned)
    got = await repos.diff(SID, cloned)
    assert (got.diff, got.paths) == ("", [])
    assert await repos.snapshot(SID, cloned, turn_id="t_1", message="nothing") is None


async def test_a_turn_commit_is_made_only_when_the_workspace_changed(
    repos: Repositories, cloned: Path
) -> None:
    assert await repos.snapshot(SID, cloned, turn_id="t_1", message="Look around") is None
    (cloned / "README.md").write_text("changed by a command\n")
    commit = await repos.snapshot(SID, cloned, turn_id="t_2", message="Edit the README")
    assert commit is not None and len(commit) == 40
    assert await repos.snapshot(SID, cloned, turn_id="t_3", message="Again") is None
    (cloned / "new.txt").write_text("new\n")
    second = await repos.snapshot(SID, cloned, turn_id="t_4", message="Add a file")

    one = await repos.diff(SID, cloned, turn_id="t_2")
    assert one.paths == ["README.md"] and one.head == commit
    assert "+changed by a command" in one.diff and "new.txt" not in one.diff
    four = await repos.diff(SID, cloned, turn_id="t_4")
    assert four.paths == ["new.txt"] and (four.base, four.head) == (commit, second)
    for quiet in ("t_1", "t_3", "t_never"):
        assert (await repos.diff(SID, cloned, turn_id=quiet)).diff == ""
    whole = await repos.diff(SID, cloned)
    assert sorted(whole.paths) == ["README.md", "new.txt"]


async def test_a_long_diff_is_cut_at_a_line_and_says_so(repos: Repositories, cloned: Path) -> None:
    (cloned / "big.txt").write_text("".join(f"row {i}\n" for i in range(5000)))
    got = await repos.diff(SID, cloned, limit=2000)
    assert got.truncated
    body, _, note = got.diff.rstrip("\n").rpartition("\n")
    assert "cut here" in note and len(body) <= 2000
    assert got.paths == ["big.txt"]


async def test_the_patch_series_applies_with_git_am_to_the_start_commit(
    repos: Repositories, cloned: Path, origin: str, tmp_path: Path
) -> None:
    (cloned / "README.md").write_text("turn one\n")
    await repos.snapshot(SID, cloned, turn_id="t_1", message="First turn\n\nBlitz-Turn: t_1\n")
    change_everything(cloned)
    await repos.snapshot(SID, cloned, turn_id="t_2", message="Second turn")
    (cloned / "later.txt").write_text("not committed by a turn\n")

    got = await repos.export(SID, cloned, format="patch")
    assert got.file_name == f"{SID}.patch"
    assert len(got.commits) == 3
    assert got.data.count(b"\nSubject: [PATCH ") == 3
    assert b"Subject: [PATCH 3/3] Uncommitted changes" in got.data

    fresh = apply_to_fresh_clone(origin, tmp_path, ["am", "-q", "--3way"], got.data)
    assert files_of(fresh) == files_of(cloned)
    subjects = run_git("log", "--format=%s", "-3", home=tmp_path, cwd=fresh).stdout.decode()
    assert subjects.splitlines() == ["Uncommitted changes", "Second turn", "First turn"]
    # The head stays at the turns' commit: the extra commit is the export's only.
    assert len((await repos.export(SID, cloned, format="patch")).commits) == 3


async def test_a_squashed_patch_is_one_commit_with_the_message(
    repos: Repositories, cloned: Path, origin: str, tmp_path: Path
) -> None:
    change_everything(cloned)
    await repos.snapshot(SID, cloned, turn_id="t_1", message="A turn")
    (cloned / "later.txt").write_text("more\n")
    got = await repos.export(SID, cloned, format="patch", squash=True, message="Fix it all")
    assert len(got.commits) == 1
    fresh = apply_to_fresh_clone(origin, tmp_path, ["am", "-q"], got.data)
    assert files_of(fresh) == files_of(cloned)
    subject = run_git("log", "--format=%s", "-1", home=tmp_path, cwd=fresh).stdout.decode()
    assert subject.strip() == "Fix it all"


async def test_the_diff_export_applies_with_git_apply_binary_files_included(
    repos: Repositories, cloned: Path, origin: str, tmp_path: Path
) -> None:
    change_everything(cloned)
    got = await repos.export(SID, cloned, format="diff")
    assert got.file_name == f"{SID}.diff" and got.commits == []
    fresh = apply_to_fresh_clone(origin, tmp_path, ["apply", "--index"], got.data)
    assert files_of(fresh) == files_of(cloned)


async def test_the_bundle_verifies_in_a_clone_of_the_origin(
    repos: Repositories, cloned: Path, origin: str, tmp_path: Path
) -> None:
    change_everything(cloned)
    await repos.snapshot(SID, cloned, turn_id="t_1", message="A turn")
    got = await repos.export(SID, cloned, format="bundle", branch="fix/things")
    assert got.file_name == f"{SID}.bundle" and len(got.commits) == 1
    fresh = tmp_path / "fresh"
    run_git("clone", "-q", origin, str(fresh), home=tmp_path)
    bundle = tmp_path / "change.bundle"
    bundle.write_bytes(got.data)
    run_git("bundle", "verify", str(bundle), home=tmp_path, cwd=fresh)
    run_git("fetch", "-q", str(bundle), "fix/things:fix/things", home=tmp_path, cwd=fresh)
    assert (
        run_git("rev-parse", "fix/things", home=tmp_path, cwd=fresh).stdout.decode().strip()
        == got.commits[-1]
    )
    # The branch was Blitz's for the bundle only.
    default = await repos.export(SID, cloned, format="bundle")
    assert default.commits == got.commits


async def test_nothing_changed_is_an_empty_export_and_no_bundle(
    repos: Repositories, cloned: Path
) -> None:
    for fmt in ("patch", "diff"):
        got = await repos.export(SID, cloned, format=fmt)
        assert (got.data, got.commits) == (b"", [])
    with pytest.raises(RepoError) as caught:
        await repos.export(SID, cloned, format="bundle")
    assert caught.value.kind == "nothing"


async def test_a_fork_starts_from_the_turn_it_was_forked_at(
    repos: Repositories, cloned: Path, tmp_path: Path
) -> None:
    (cloned / "a.txt").write_text("a\n")
    first = await repos.snapshot(SID, cloned, turn_id="t_1", message="One")
    await repos.snapshot(SID, cloned, turn_id="t_2", message="Nothing")
    fork_ws = tmp_path / "fork-ws"
    shutil.copytree(cloned, fork_ws, symlinks=True)  # the core copies the files at t_2
    (cloned / "b.txt").write_text("b\n")
    await repos.snapshot(SID, cloned, turn_id="t_3", message="Two")

    await repos.fork(SID, FORK, at_turn="t_2")
    assert (await repos.export(FORK, fork_ws, format="patch")).commits == [first]
    assert (await repos.diff(FORK, fork_ws, turn_id="t_1")).paths == ["a.txt"]
    assert (await repos.diff(FORK, fork_ws, turn_id="t_3")).diff == ""
    assert (await repos.diff(FORK, fork_ws)).paths == ["a.txt"]
    # The source is as it was.
    assert (await repos.diff(SID, cloned, turn_id="t_3")).paths == ["b.txt"]
    assert len((await repos.export(SID, cloned, format="patch")).commits) == 2


async def test_a_rewind_drops_the_later_turns_commits(repos: Repositories, cloned: Path) -> None:
    (cloned / "a.txt").write_text("a\n")
    first = await repos.snapshot(SID, cloned, turn_id="t_1", message="One")
    (cloned / "b.txt").write_text("b\n")
    await repos.snapshot(SID, cloned, turn_id="t_2", message="Two")
    await repos.rewind(SID, to_turn="t_1")
    (cloned / "b.txt").unlink()  # the files go back too (the core restores them)
    got = await repos.export(SID, cloned, format="patch")
    assert got.commits == [first]
    assert (await repos.diff(SID, cloned, turn_id="t_2")).diff == ""


async def test_remove_deletes_the_git_data(
    repos: Repositories, cloned: Path, tmp_path: Path
) -> None:
    await repos.remove(SID)
    assert not repos.has(SID)
    assert entries(tmp_path / "repo-data") == [".home"]
    assert (cloned / ".git").is_dir()  # the workspace is the core's to delete


def apply_to_fresh_clone(origin: str, tmp_path: Path, command: list[str], data: bytes) -> Path:
    fresh = tmp_path / "fresh"
    run_git("clone", "-q", origin, str(fresh), home=tmp_path)
    run_git(*command, input=data, home=tmp_path, cwd=fresh)
    return fresh


def files_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under `root` but `.git` and what .gitignore ignores here: its content
    and whether it is executable."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", "build") or rel == "debug.log" or path.is_dir():
            continue
        found[rel] = (path.read_bytes(), os.access(path, os.X_OK))
    return found
