"""A session's workspace is a name the server resolves under its root, and cannot be widened.

A name is one or more plain folder names; the folder it names must not be, or pass through,
a symbolic link, when the session is created and whenever its files are looked at later.
Sessions may still share a named workspace on purpose.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from support.wire import decide, drive, expect_error

from blitz.config import Settings
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

if TYPE_CHECKING:
    from conftest import Outside
    from support.wire import Wire


# `.` is the root itself: every other session's folder.
@pytest.mark.parametrize(
    "name",
    [".", "./", "./x", "a/./b", "a//b", "a/", "/etc", "..", "a/..", "a\\b", "a\x00b", "x" * 300],
)
async def test_workspace_names_that_are_not_plain_folder_names_are_refused(
    wire: Wire, settings: Settings, name: str
) -> None:
    error = await expect_error(
        wire.create_session(workspace=name), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "workspace"
    assert list(settings.workspace_root.iterdir()) == [], "no folder made for a refused name"


async def test_a_workspace_through_a_link_another_session_made_is_refused(
    wire: Wire, settings: Settings, outside: Outside
) -> None:
    """After an approved `ln -s / rootlink` in one session, no session can be opened on
    `<that workspace>/rootlink`, nor through a link to a folder outside."""
    a = await wire.create_session()
    ln = f"$ ln -s / rootlink && ln -s {outside.folder} out"
    await drive(wire, a.id, ln, decide(wire, a.id, t.DECISION_ONCE))
    assert (settings.workspace_root / a.workspace / "rootlink").is_symlink()
    (settings.workspace_root / "toplink").symlink_to(outside.folder)
    for name in (
        f"{a.workspace}/rootlink",
        f"{a.workspace}/rootlink/etc",
        f"{a.workspace}/out",
        f"{a.workspace}/out/fresh",
        "toplink",
        "toplink/sub",
    ):
        error = await expect_error(
            wire.create_session(workspace=name), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == "workspace", name
        assert "link" in error.message
    assert outside.untouched()


async def test_sessions_still_share_a_named_workspace_on_purpose(wire: Wire) -> None:
    first = await wire.create_session(workspace="team/app")
    second = await wire.create_session(workspace="team/app")
    assert first.workspace == second.workspace == "team/app"
    await drive(
        wire,
        first.id,
        "write notes.txt\n```\nshared\n```",
        decide(wire, first.id, t.DECISION_ONCE),
    )
    read = await wire.call("ReadFile", w.ReadFileRequest(session_id=second.id, path="notes.txt"))
    assert read.content == b"shared\n"


async def test_a_workspace_folder_swapped_for_a_link_later_shows_nothing_outside(
    wire: Wire, settings: Settings, outside: Outside
) -> None:
    """A session's folder replaced by a link after the session was made (by a command in
    another session, say) is refused: no view of it and no turn reads through it."""
    session = await wire.create_session(workspace="team")
    folder = settings.workspace_root / "team"
    os.rmdir(folder)
    os.symlink(outside.folder, folder)

    for method, request in (
        ("ReadFile", w.ReadFileRequest(session_id=session.id, path="secret.txt")),
        ("ListFiles", w.ListFilesRequest(session_id=session.id)),
    ):
        error = await expect_error(wire.call(method, request), "not_found", "FILE_NOT_FOUND")
        assert "link" in error.message
    events = await drive(
        wire,
        session.id,
        "read secret.txt\nwrite secret.txt\n```\npwned\n```",
        decide(wire, session.id, t.DECISION_ONCE),
    )
    assert "the secret" not in str(events)
    assert events[-1].finished.error.reason == "FILE_NOT_FOUND", "said so, not an internal error"
    assert outside.untouched()
