"""Tool paths stay inside the workspace: `..`, outside absolute paths and symlinks are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from blitz.paths import PathRefused, Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("secret\n")
    return out


def test_relative_and_inside_absolute_paths_resolve(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert ws.resolve("a/b.txt") == workspace.resolve() / "a" / "b.txt"
    assert ws.resolve(str(workspace / "c.txt")) == workspace.resolve() / "c.txt"
    assert ws.relative(ws.resolve(".")) == "."


@pytest.mark.parametrize("path", ["..", "../x", "a/../../x", "a/../b"])
def test_dotdot_is_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PathRefused, match=r"'\.\.'"):
        Workspace(workspace).resolve(path)


@pytest.mark.parametrize("path", ["a" * 256, "é" * 128, "a/" * 2048, "/".join(["d" * 200] * 21)])
def test_paths_no_file_system_takes_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PathRefused, match="too long"):
        Workspace(workspace).resolve(path)
    assert Workspace(workspace).resolve("a" * 255).name == "a" * 255


def test_absolute_path_outside_is_refused(workspace: Path, outside: Path) -> None:
    with pytest.raises(PathRefused, match="outside the workspace"):
        Workspace(workspace).resolve(str(outside / "secret.txt"))
    with pytest.raises(PathRefused, match="outside the workspace"):
        Workspace(workspace).resolve("/etc/passwd")


def test_symlink_out_of_the_workspace_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "link").symlink_to(outside)
    (workspace / "file-link").symlink_to(outside / "secret.txt")
    ws = Workspace(workspace)
    for path in ["link", "link/secret.txt", "link/new.txt", "file-link"]:
        with pytest.raises(PathRefused, match="outside the workspace"):
            ws.resolve(path)


def test_symlink_inside_the_workspace_is_allowed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    assert Workspace(workspace).resolve("alias/x") == workspace.resolve() / "real" / "x"


@pytest.mark.parametrize("path", ["", "a\x00b"])
def test_empty_or_nul_path_is_refused(workspace: Path, path: str) -> None:
    with pytest.raises(PathRefused):
        Workspace(workspace).resolve(path)
