"""The sandbox matrix: every file tool and the core's ReadFile/ListFiles, against every trap.

A trap is something a hostile turn (an approved command, say) could leave in a workspace,
or a path a hostile prompt could name: `..`, an absolute path, links out to a file or a
folder, a loop of links, a hard link to a file outside, a fifo, a device, names too long
for the file system, `/proc`. Each must be refused (an error result the model sees, or
INVALID_ARGUMENT/FILE_NOT_FOUND for a client), before anyone is asked to approve it, with
nothing outside the workspace read, changed or removed.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError

if TYPE_CHECKING:
    from conftest import Outside, Session

Setup = Callable[[Path, "Outside"], None]


def _nothing(ws: Path, outside: Outside) -> None:
    pass


def _link_to_file(ws: Path, outside: Outside) -> None:
    (ws / "link").symlink_to(outside.secret)


def _link_to_folder(ws: Path, outside: Outside) -> None:
    (ws / "dirlink").symlink_to(outside.folder)


def _hard_link(ws: Path, outside: Outside) -> None:
    os.link(outside.secret, ws / "hlink")


def _fifo(ws: Path, outside: Outside) -> None:
    os.mkfifo(ws / "fifo")


def _device(ws: Path, outside: Outside) -> None:
    # /dev/zero's numbers: a read of it never ends by itself.
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device needs CAP_MKNOD")


def _device_link(ws: Path, outside: Outside) -> None:
    (ws / "null").symlink_to("/dev/null")


def _link_loop(ws: Path, outside: Outside) -> None:
    (ws / "loop").symlink_to("loop")


def _proc_link(ws: Path, outside: Outside) -> None:
    (ws / "proc").symlink_to("/proc/self")


@dataclass(frozen=True)
class Trap:
    """A trap: how it is laid, the paths that spring it, and what the tools answer."""

    file: str  # given to the file tools; {outside} is the outside folder
    folder: str  # given to list_files, ListFiles and search
    refusal: str  # in every tool's error
    setup: Setup = _nothing
    # list_files of a path that is not a folder says so instead.
    not_a_folder: bool = False


TRAPS = {
    "dotdot": Trap("../../../outside/secret.txt", "../../../outside", "contains '..'"),
    "absolute": Trap("{outside}/secret.txt", "{outside}", "is outside the workspace"),
    "link-to-file": Trap("link", "link", "is outside the workspace", _link_to_file),
    "link-to-folder": Trap(
        "dirlink/secret.txt", "dirlink", "is outside the workspace", _link_to_folder
    ),
    "hard-link": Trap("hlink", "hlink", "has other hard links", _hard_link, not_a_folder=True),
    "fifo": Trap("fifo", "fifo", "is a fifo", _fifo, not_a_folder=True),
    "device": Trap("zero", "zero", "is a device", _device, not_a_folder=True),
    "device-link": Trap("null", "null", "is outside the workspace", _device_link),
    "link-loop": Trap("loop/x", "loop", "could not be resolved", _link_loop),
    "long-name": Trap("a" * 300, "b" * 300, "is too long"),
    "long-path": Trap("a/" * 2100 + "x", "a/" * 2100, "is too long"),
    "proc": Trap("/proc/self/environ", "/proc/self", "is outside the workspace"),
    "proc-link": Trap("proc/environ", "proc", "is outside the workspace", _proc_link),
}

# Each file tool with the arguments that would spring a trap at `path`.
FILE_CALLS: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
    "read_file": lambda path: ("read_file", {"path": path}),
    "write_file": lambda path: ("write_file", {"path": path, "content": "pwned\n"}),
    "edit_file": lambda path: (
        "edit_file",
        {"path": path, "old_string": "the secret", "new_string": "pwned"},
    ),
    "delete_file": lambda path: ("delete_file", {"path": path}),
    "search-file": lambda path: ("search", {"pattern": "secret", "path": path}),
}
FOLDER_CALLS: dict[str, Callable[[str], tuple[str, dict[str, Any]]]] = {
    "list_files": lambda path: ("list_files", {"path": path}),
    "search-folder": lambda path: ("search", {"pattern": "secret", "path": path}),
}


@pytest.mark.parametrize("call", [*FILE_CALLS, *FOLDER_CALLS])
@pytest.mark.parametrize("trap", TRAPS)
async def test_every_file_tool_refuses_every_trap(
    session: Session, outside: Outside, trap: str, call: str
) -> None:
    laid = TRAPS[trap]
    laid.setup(session.workspace, outside)
    before = _workspace_entries(session.workspace)
    if call in FILE_CALLS:
        tool, args = FILE_CALLS[call](laid.file.format(outside=outside.folder))
    else:
        tool, args = FOLDER_CALLS[call](laid.folder.format(outside=outside.folder))
    result = await session.call(tool, **args)
    expected = "no such folder" if tool == "list_files" and laid.not_a_folder else laid.refusal
    assert expected in result.get("error", ""), result
    assert session.asked == 0, "refused before anyone was asked"
    assert "the secret" not in json.dumps(result)
    assert outside.untouched()
    assert _workspace_entries(session.workspace) == before


@pytest.mark.parametrize("trap", TRAPS)
async def test_read_file_and_list_files_refuse_every_trap(
    session: Session, outside: Outside, trap: str
) -> None:
    laid = TRAPS[trap]
    laid.setup(session.workspace, outside)
    path = laid.file.format(outside=outside.folder)
    with pytest.raises(BlitzError) as raised:
        await session.wire.call("ReadFile", w.ReadFileRequest(session_id=session.id, path=path))
    assert (raised.value.reason, raised.value.metadata["field"]) == ("INVALID_ARGUMENT", "path")
    assert laid.refusal in raised.value.message

    folder = laid.folder.format(outside=outside.folder)
    with pytest.raises(BlitzError) as raised:
        await session.wire.call("ListFiles", w.ListFilesRequest(session_id=session.id, path=folder))
    if laid.not_a_folder:
        assert raised.value.reason == "FILE_NOT_FOUND"
    else:
        assert (raised.value.reason, raised.value.metadata["field"]) == (
            "INVALID_ARGUMENT",
            "path",
        )
        assert laid.refusal in raised.value.message
    assert outside.untouched()


async def test_a_whole_workspace_of_traps_lists_links_as_links_and_searches_none(
    session: Session, outside: Outside
) -> None:
    """Listing and searching the workspace itself follows no link and reads no trap."""
    for trap in TRAPS.values():
        if trap.setup is not _device:
            trap.setup(session.workspace, outside)
    (session.workspace / "mine.txt").write_text("my secret\n")

    listed = await session.call("list_files", path=".")
    assert listed["entries"] == [
        *("dirlink@", "fifo", "hlink", "link@", "loop@", "mine.txt", "null@", "proc@")
    ]
    found = await session.call("search", pattern="secret")
    assert found["matches"] == ["mine.txt:1: my secret"]

    core = await session.wire.call("ListFiles", w.ListFilesRequest(session_id=session.id))
    assert [(e.path, e.directory) for e in core.entries] == [("hlink", False), ("mine.txt", False)]
    assert outside.untouched()


async def test_links_that_stay_inside_still_work_as_aliases(session: Session) -> None:
    """A link to a file or folder inside the workspace is followed to where it really is."""
    (session.workspace / "real").mkdir()
    (session.workspace / "real" / "a.txt").write_text("inside\n")
    (session.workspace / "alias").symlink_to("real")
    (session.workspace / "a-link.txt").symlink_to("real/a.txt")

    assert (await session.call("read_file", path="alias/a.txt"))["content"] == "inside\n"
    assert (await session.call("read_file", path="a-link.txt"))["path"] == "real/a.txt"
    written = await session.call("write_file", path="alias/b.txt", content="new\n")
    assert written == {"path": "real/b.txt", "bytes": 4}
    assert (session.workspace / "real" / "b.txt").read_text() == "new\n"
    assert (await session.call("list_files", path="alias"))["entries"] == ["a.txt", "b.txt"]


async def test_a_write_keeps_the_files_mode_and_replaces_it_whole(session: Session) -> None:
    script = session.workspace / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    inode = script.stat().st_ino
    await session.call("write_file", path="run.sh", content="echo new\n")
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.stat().st_ino != inode, "a new file renamed into place, not the old one opened"
    assert [p.name for p in session.workspace.iterdir()] == ["run.sh"], "no temporary file left"


def _workspace_entries(ws: Path) -> list[str]:
    return sorted(os.listdir(ws))
