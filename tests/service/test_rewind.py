"""Rewinding a session to one of its turns, and forking one at an older turn: the model's
history as that turn left it, and the workspace's files as they were then, from each
turn's checkpoints."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from support.servers import serving
from support.wire import Wire, decide, drive, expect_error, follow_until_finished, until

from blitz.core.files import snapshots
from blitz.store import open_store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

pytestmark = pytest.mark.engines("sqlite", "postgres")


def write(path: str, text: str) -> str:
    """The demo model's prompt to write `text` to `path` with its write tool."""
    return f"write {path}\n```\n{text}\n```"


async def turn(wire: Wire, session_id: str, prompt: str) -> str:
    """Run a turn to its end, approving whatever it asks; its id."""
    events = await drive(wire, session_id, prompt, decide(wire, session_id, t.DECISION_ONCE))
    assert events[-1].HasField("finished") and not events[-1].finished.HasField("error"), events
    return events[0].turn_id


async def rewind(wire: Wire, session_id: str, to_turn_id: str, *, files: bool):
    request = s.RewindSessionRequest(session_id=session_id, to_turn_id=to_turn_id, files=files)
    return await wire.call("RewindSession", request)


async def events_of(wire: Wire, session_id: str) -> list[t.TurnEvent]:
    return [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session_id))]


async def summary(wire: Wire, session_id: str) -> str:
    """What the model remembers (the demo's /compact summary lists what it was asked)."""
    return (await wire.run_all(session_id, "/compact", command=True))[-1].finished.output


@pytest.mark.parity
async def test_a_rewind_puts_back_what_the_agent_changed_and_shortens_the_history(wire, settings):
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    (folder / "script.sh").write_text("echo hi\n")
    (folder / "script.sh").chmod(0o755)
    (folder / "gone.txt").write_text("bye\n")
    (folder / "mine.txt").write_text("mine\n")
    first = await turn(wire, session.id, write("notes.txt", "hello"))
    (folder / "mine.txt").write_text("changed by me, between turns\n")
    second = await turn(
        wire,
        session.id,
        write("notes.txt", "changed")
        + "\n$ echo x > f.txt && printf more >> script.sh && chmod 600 script.sh"
        + " && rm gone.txt && mkdir -p made/deep && echo z > made/deep/z.txt",
    )
    assert (folder / "f.txt").exists() and not (folder / "gone.txt").exists()

    got = await rewind(wire, session.id, first, files=True)

    rewound = got.rewound
    assert rewound.to_turn_id == first
    assert list(rewound.dropped_turn_ids) == [second]
    assert rewound.files
    assert sorted(rewound.restored_paths) == [
        "f.txt", "gone.txt", "made", "made/deep", "made/deep/z.txt", "notes.txt", "script.sh"
    ]  # fmt: skip
    assert list(rewound.unrestored_paths) == []
    assert (folder / "notes.txt").read_bytes() == b"hello\n"
    assert (folder / "script.sh").read_bytes() == b"echo hi\n"
    assert stat.S_IMODE((folder / "script.sh").stat().st_mode) == 0o755
    assert (folder / "gone.txt").read_bytes() == b"bye\n"
    assert not (folder / "f.txt").exists() and not (folder / "made").exists()
    assert (folder / "mine.txt").read_text() == "changed by me, between turns\n", "not the agent's"
    # The log keeps everything, and marks the place.
    log = await events_of(wire, session.id)
    assert log[-1].HasField("rewound") and log[-1].turn_id == ""
    assert log[-1].rewound == rewound
    assert got.session.last_seq == log[-1].seq and got.session.state == s.SESSION_STATE_IDLE
    assert any(e.turn_id == second for e in log), "the dropped turn's events stay"
    # The model remembers the first turn, not the second.
    remembered = await summary(wire, session.id)
    assert "notes.txt" in remembered and "made/deep" not in remembered
    # A dropped turn is gone from the history: nothing goes back to it.
    error = await expect_error(
        rewind(wire, session.id, second, files=False), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "to_turn_id"


async def test_a_rewind_without_files_leaves_them_and_shortens_the_history(wire, settings):
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    first = await turn(wire, session.id, "remember the word zebra")
    await turn(wire, session.id, write("notes.txt", "after"))
    await wire.run_all(session.id, "todo: one; two")

    got = await rewind(wire, session.id, first, files=False)

    assert not got.rewound.files
    assert list(got.rewound.restored_paths) == list(got.rewound.unrestored_paths) == []
    assert len(got.rewound.dropped_turn_ids) == 2
    assert (folder / "notes.txt").read_text() == "after\n"
    remembered = await summary(wire, session.id)
    assert "zebra" in remembered and "notes.txt" not in remembered
    listed = await wire.run_all(session.id, "/tasks", command=True)
    assert listed[-1].finished.output == "No tasks.", "the task list went with its turns"


async def test_a_rewind_is_refused_while_a_turn_is_parked(wire, settings):
    session = await wire.create_session()
    first = await turn(wire, session.id, write("notes.txt", "one"))
    stream = wire.run(session.id, write("notes.txt", "two"))
    asked = await until(stream, "approval_request")
    await stream.aclose()

    error = await expect_error(
        rewind(wire, session.id, first, files=True), "failed_precondition", "SESSION_BUSY"
    )
    assert error.metadata["turn_id"] == asked.turn_id
    assert "idle" in error.message
    log = await events_of(wire, session.id)
    assert not any(e.HasField("rewound") for e in log)


async def test_a_rewind_to_an_unknown_aside_or_too_old_turn_is_refused(wire):
    session = await wire.create_session()
    await expect_error(
        rewind(wire, session.id, "t_nope", files=True), "not_found", "TURN_NOT_FOUND"
    )
    aside = (await wire.run_all(session.id, "hello", aside=True))[0].turn_id
    error = await expect_error(
        rewind(wire, session.id, aside, files=True), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "to_turn_id" and "aside" in error.message
    turns = [(await wire.run_all(session.id, f"turn {i}"))[0].turn_id for i in range(21)]
    error = await expect_error(
        rewind(wire, session.id, turns[0], files=True), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert (error.metadata["field"], error.metadata["limit"]) == ("to_turn_id", "20")
    assert (await rewind(wire, session.id, turns[1], files=True)).rewound.to_turn_id == turns[1]


@pytest.mark.parity
async def test_a_fork_at_an_older_turn_gets_the_files_as_they_were_then(wire, settings):
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    first = await turn(wire, session.id, write("notes.txt", "hello"))
    await turn(wire, session.id, write("notes.txt", "changed") + "\n$ echo x > f.txt")

    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=first)
    )

    copied = settings.workspace_root / fork.workspace
    assert (copied / "notes.txt").read_bytes() == b"hello\n"
    assert not (copied / "f.txt").exists()
    assert (folder / "notes.txt").read_text() == "changed\n" and (folder / "f.txt").exists()
    assert not any(e.HasField("notice") for e in await events_of(wire, fork.id))


async def test_a_fork_of_a_parked_session_undoes_its_turn_so_far(wire, settings):
    session = await wire.create_session()
    first = await turn(wire, session.id, write("notes.txt", "hello"))
    stream = wire.run(session.id, "$ echo x > f.txt\n" + write("notes.txt", "later"))
    await wire.decide_next(stream, session.id, t.DECISION_ONCE)
    await until(stream, "approval_request")  # the command ran: the write asks
    await stream.aclose()
    assert (settings.workspace_root / session.workspace / "f.txt").exists()

    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=first)
    )
    copied = settings.workspace_root / fork.workspace
    assert not (copied / "f.txt").exists()
    assert (copied / "notes.txt").read_text() == "hello\n"


async def test_a_link_out_of_the_workspace_is_put_back_as_a_link_and_never_followed(
    wire, settings, tmp_path: Path
):
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    os.symlink(outside, folder / "out.txt")
    (folder / "plain.txt").write_text("plain\n")
    first = await turn(wire, session.id, "hello")
    await turn(
        wire,
        session.id,
        f"$ rm out.txt && echo replaced > out.txt && rm plain.txt && ln -s {outside} plain.txt",
    )

    got = await rewind(wire, session.id, first, files=True)

    assert sorted(got.rewound.restored_paths) == ["out.txt", "plain.txt"]
    assert os.readlink(folder / "out.txt") == str(outside)
    assert not (folder / "plain.txt").is_symlink()
    assert (folder / "plain.txt").read_text() == "plain\n"
    assert outside.read_text() == "outside\n", "nothing was written through a link"


async def test_a_file_too_large_for_a_checkpoint_is_listed_and_not_put_back(
    wire, settings, monkeypatch
):
    monkeypatch.setattr(snapshots, "FILE_MAX", 16)
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    (folder / "big.bin").write_bytes(b"b" * 32)
    first = await turn(wire, session.id, "hello")
    await turn(wire, session.id, "$ echo small > big.bin && echo x > f.txt")

    got = await rewind(wire, session.id, first, files=True)

    assert list(got.rewound.unrestored_paths) == ["big.bin"]
    assert list(got.rewound.restored_paths) == ["f.txt"]
    assert (folder / "big.bin").read_text() == "small\n", "left as it is"
    notices = [e.notice.text for e in await events_of(wire, session.id) if e.HasField("notice")]
    assert any("partial" in n and "recorded without their content" in n for n in notices)
    assert "big.bin: it was larger than a checkpoint keeps" in notices[-1]


async def test_past_the_entries_bound_a_checkpoint_is_partial_and_says_so(
    wire, settings, monkeypatch
):
    monkeypatch.setattr(snapshots, "ENTRIES_MAX", 2)
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    for name in ("a.txt", "b.txt", "z.txt"):
        (folder / name).write_text(f"{name}\n")
    first = await turn(wire, session.id, "hello")
    await turn(wire, session.id, "$ echo changed > a.txt && echo changed > z.txt")

    got = await rewind(wire, session.id, first, files=True)

    assert list(got.rewound.restored_paths) == ["a.txt"]
    assert (folder / "a.txt").read_text() == "a.txt\n"
    assert (folder / "z.txt").read_text() == "changed\n", "past the bound: not known"
    log = await events_of(wire, session.id)
    assert log[-2].HasField("notice") and "partial" in log[-2].notice.text
    assert any("stopped at 2 files and folders" in e.notice.text for e in log[:-2])


async def test_deleting_a_session_deletes_its_checkpoints(settings):
    async with serving(settings) as wire:
        session = await wire.create_session()
        await turn(wire, session.id, write("notes.txt", "hello"))
    async with open_store(settings.database) as store:
        assert await store.checkpointed_turns(session.id)
        assert await store.checkpoint_blob_hashes(session.id)
    async with serving(settings) as wire:
        await wire.call("DeleteSession", s.DeleteSessionRequest(session_id=session.id))
    async with open_store(settings.database) as store:
        assert await store.checkpointed_turns(session.id) == []
        assert await store.checkpoint_blob_hashes(session.id) == set()


async def checkpoints_of(settings, session_id: str, turn_id: str) -> dict[str, bytes | None]:
    async with open_store(settings.database) as store:
        return {c.at: c.manifest for c in await store.get_checkpoints(session_id, turn_id)}


async def test_a_turn_that_changes_nothing_takes_no_snapshot_and_still_rewinds(wire, settings):
    """The start checkpoint is taken at the turn's first change: a turn that only answers
    stores its end alone, a reference that says it changed nothing; one parked on its
    first command has none yet. Rewinds and forks to either still know the files."""
    session = await wire.create_session()
    folder = settings.workspace_root / session.workspace
    first = await turn(wire, session.id, write("notes.txt", "hello"))
    quiet = await turn(wire, session.id, "hello there")
    stream = wire.run(session.id, "$ echo x > f.txt")
    asked = await until(stream, "approval_request")
    parked = asked.turn_id
    await stream.aclose()

    assert set(await checkpoints_of(settings, session.id, first)) == {"start", "end"}
    assert await checkpoints_of(settings, session.id, quiet) == {"end": None}
    assert await checkpoints_of(settings, session.id, parked) == {}
    diff = await wire.call("GetDiff", w.GetDiffRequest(session_id=session.id, turn_id=quiet))
    assert diff.diff == "" and list(diff.paths) == []

    # A fork at the quiet turn while the next is parked before its change: the files as
    # the turns before it left them, nothing unknown.
    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=quiet)
    )
    assert (settings.workspace_root / fork.workspace / "notes.txt").read_text() == "hello\n"
    notices = [e.notice.text for e in await events_of(wire, fork.id) if e.HasField("notice")]
    assert notices == [], notices

    # Approved, the command runs after the start is taken; its end says what it made.
    await wire.decide(session.id, asked, t.DECISION_ONCE)
    await follow_until_finished(wire, session.id, after_seq=asked.seq)
    assert (folder / "f.txt").exists()
    got = await checkpoints_of(settings, session.id, parked)
    assert set(got) == {"start", "end"} and got["start"] is not None

    rewound = (await rewind(wire, session.id, quiet, files=True)).rewound
    assert list(rewound.restored_paths) == ["f.txt"] and not (folder / "f.txt").exists()
    assert (folder / "notes.txt").read_text() == "hello\n"
