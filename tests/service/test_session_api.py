"""Reading a session's turns back, and changing, deleting, forking and diffing sessions."""

from __future__ import annotations

import asyncio
import os

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from support.wire import decide, drive, expect_error

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

pytestmark = pytest.mark.engines("sqlite", "postgres")

WRITE = "write notes/a.txt\n```\n{}\n```\nwritten"


@pytest.mark.parity
async def test_accepted_echoes_the_turn_as_recorded(wire):
    session = await wire.create_session()
    events = await wire.run_all(session.id, "hello there", plan=True, max_turns=3)
    recorded = events[0].accepted.turn
    assert (recorded.text, recorded.plan, recorded.max_turns) == ("hello there", True, 3)


@pytest.mark.parity
async def test_turns_list_oldest_first_with_request_state_usage_and_output(wire):
    session = await wire.create_session()
    for text in ("first", "second", "third"):
        await wire.run_all(session.id, text)
    page = await wire.call("ListTurns", s.ListTurnsRequest(session_id=session.id, page_size=2))
    assert [x.turn.text for x in page.turns] == ["first", "second"]
    assert page.next_page_token
    rest = await wire.call(
        "ListTurns",
        s.ListTurnsRequest(session_id=session.id, page_size=2, page_token=page.next_page_token),
    )
    assert [x.turn.text for x in rest.turns] == ["third"] and not rest.next_page_token
    first = page.turns[0]
    assert first.state == s.TURN_STATE_FINISHED
    assert first.output and not first.HasField("error")
    assert first.usage.calls >= 1
    assert first.finish_time.ToNanoseconds() >= first.create_time.ToNanoseconds() > 0


@pytest.mark.parity
async def test_one_turn_reads_as_the_list_shows_it(wire):
    session = await wire.create_session()
    await wire.run_all(session.id, "first")
    await wire.run_all(session.id, "second")
    listed = await wire.call("ListTurns", s.ListTurnsRequest(session_id=session.id))
    first = listed.turns[0]
    got = await wire.call("GetTurn", s.GetTurnRequest(session_id=session.id, turn_id=first.turn_id))
    assert got == first
    await expect_error(
        wire.call("GetTurn", s.GetTurnRequest(session_id=session.id, turn_id="t_nope")),
        "not_found",
        "TURN_NOT_FOUND",
    )


@pytest.mark.parity
async def test_a_failed_turn_lists_its_error(wire):
    session = await wire.create_session()
    # A tool call and then a reply: two model calls, one more than it may make.
    events = await wire.run_all(session.id, "ls", max_turns=1)
    assert events[-1].finished.error.reason == "MAX_TURNS"
    (listed,) = [
        x
        for x in (await wire.call("ListTurns", s.ListTurnsRequest(session_id=session.id))).turns
        if x.turn_id == events[0].turn_id
    ]
    assert listed.error.reason == events[-1].finished.error.reason


@pytest.mark.parity
async def test_bad_list_turns_and_update_requests_name_the_field(wire):
    session = await wire.create_session()
    for request, field in (
        (s.ListTurnsRequest(session_id=session.id, page_size=-1), "page_size"),
        (s.ListTurnsRequest(session_id=session.id, page_token="nope"), "page_token"),
    ):
        error = await expect_error(
            wire.call("ListTurns", request), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == field
    for request, field in (
        (s.UpdateSessionRequest(session_id=session.id, title="x"), "update_mask"),
        (
            s.UpdateSessionRequest(session_id=session.id, update_mask=FieldMask(paths=["model"])),
            "update_mask",
        ),
        (
            s.UpdateSessionRequest(
                session_id=session.id, title="x" * 501, update_mask=FieldMask(paths=["title"])
            ),
            "title",
        ),
        (
            s.UpdateSessionRequest(
                session_id=session.id,
                labels={"bad key": "x"},
                update_mask=FieldMask(paths=["labels"]),
            ),
            "labels",
        ),
        (
            # Each field once: ten thousand paths are refused, not read one by one.
            s.UpdateSessionRequest(
                session_id=session.id, title="x", update_mask=FieldMask(paths=["title"] * 10_000)
            ),
            "update_mask",
        ),
    ):
        error = await expect_error(
            wire.call("UpdateSession", request), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == field


@pytest.mark.parity
async def test_an_update_changes_only_what_its_mask_names(wire):
    session = await wire.create_session(title="old", labels={"a": "1"})
    updated = await wire.call(
        "UpdateSession",
        s.UpdateSessionRequest(
            session_id=session.id,
            title="new",
            labels={"b": "2"},
            approval_timeout=Duration(seconds=90),
            update_mask=FieldMask(paths=["title", "approval_timeout"]),
        ),
    )
    assert (updated.title, dict(updated.labels)) == ("new", {"a": "1"})
    assert updated.approval_timeout.seconds == 90
    cleared = await wire.call(
        "UpdateSession",
        s.UpdateSessionRequest(
            session_id=session.id,
            labels={"b": "2"},
            update_mask=FieldMask(paths=["labels", "approval_timeout"]),
        ),
    )
    assert dict(cleared.labels) == {"b": "2"} and not cleared.HasField("approval_timeout")


@pytest.mark.parity
async def test_a_deleted_session_and_its_own_folder_are_gone(wire, settings):
    session = await wire.create_session()
    await drive(wire, session.id, WRITE.format("hi"), decide(wire, session.id, t.DECISION_ONCE))
    folder = settings.workspace_root / session.id
    assert (folder / "notes" / "a.txt").exists()
    watch = wire.stream("Watch", s.WatchRequest(session_id=session.id, follow=True))
    seen = [await anext(watch)]  # the watcher is following
    deleted = await wire.call("DeleteSession", s.DeleteSessionRequest(session_id=session.id))
    assert deleted.workspace_deleted and not folder.exists()
    async with asyncio.timeout(10):
        seen += [e async for e in watch]
    assert seen[-1].session_state.state == t.SessionStateChange.STATE_CLOSED, "ends cleanly"
    assert seen[-1].session_state.reason == "deleted"
    await expect_error(
        wire.call("GetSession", s.GetSessionRequest(session_id=session.id)),
        "not_found",
        "SESSION_NOT_FOUND",
    )


@pytest.mark.parity
async def test_a_named_workspace_outlives_its_deleted_session(wire, settings):
    session = await wire.create_session(workspace="shared")
    deleted = await wire.call("DeleteSession", s.DeleteSessionRequest(session_id=session.id))
    assert not deleted.workspace_deleted and (settings.workspace_root / "shared").is_dir()


@pytest.mark.parity
async def test_a_session_with_a_parked_turn_is_not_deleted(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, WRITE.format("hi"))
    async for event in stream:
        if event.HasField("approval_request"):
            break
    await stream.aclose()
    await expect_error(
        wire.call("DeleteSession", s.DeleteSessionRequest(session_id=session.id)),
        "failed_precondition",
        "SESSION_BUSY",
    )
    assert (await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))).id


@pytest.mark.parity
async def test_a_fork_starts_from_the_history_at_its_turn_in_a_copy_of_the_workspace(
    wire, settings
):
    session = await wire.create_session(title="origin")
    yes = decide(wire, session.id, t.DECISION_ONCE)
    first = await drive(wire, session.id, WRITE.format("one"), yes)
    await drive(wire, session.id, "remember the word zebra")
    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=first[0].turn_id)
    )
    assert fork.id != session.id and fork.title == "fork of origin"
    assert fork.workspace == fork.id and fork.last_seq == 0
    copied = settings.workspace_root / fork.id / "notes" / "a.txt"
    assert copied.read_text() == "one\n"
    # The fork's agent history ends at the first turn (the demo's /compact summary lists
    # what was asked), and a turn runs in it.
    summary = (await wire.run_all(fork.id, "/compact", command=True))[-1].finished.output
    assert "notes/a.txt" in summary and "zebra" not in summary
    origin = (await wire.run_all(session.id, "/compact", command=True))[-1].finished.output
    assert "zebra" in origin, "the source keeps its whole history"
    events = await wire.run_all(fork.id, "echo history")
    assert events[-1].HasField("finished") and not events[-1].finished.HasField("error")
    await expect_error(
        wire.call("ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id="t_nope")),
        "not_found",
        "TURN_NOT_FOUND",
    )


async def test_a_fork_leaves_out_hard_linked_and_special_files_and_says_so(
    wire, settings, tmp_path
):
    """A hard link to a file outside the workspace would become the fork's own copy of it."""
    session = await wire.create_session()
    first = await wire.run_all(session.id, "hello")
    await wire.run_all(session.id, "again")  # the first is recorded finished by now
    folder = settings.workspace_root / session.workspace
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("not the fork's\n")
    os.link(outside, folder / "linked.txt")
    os.mkfifo(folder / "pipe")
    (folder / "plain.txt").write_text("kept\n")
    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=first[0].turn_id)
    )
    copied = settings.workspace_root / fork.workspace
    assert (copied / "plain.txt").read_text() == "kept\n"
    assert not (copied / "linked.txt").exists() and not (copied / "pipe").exists()
    events = [
        e async for e in wire.stream("Watch", s.WatchRequest(session_id=fork.id, follow=False))
    ]
    [notice] = [e.notice.text for e in events if e.HasField("notice")]
    assert "2 special or hard-linked files" in notice and "linked.txt" in notice


@pytest.mark.parity
async def test_the_diff_shows_what_the_agents_file_tools_changed(wire, settings):
    session = await wire.create_session()
    folder = settings.workspace_root / session.id
    (folder / "keep.txt").write_text("untouched\n")
    (folder / "gone.txt").write_text("bye\n")
    yes = decide(wire, session.id, t.DECISION_ONCE)
    await drive(wire, session.id, WRITE.format("one"), yes)
    await drive(wire, session.id, WRITE.format("two") + "\ndelete gone.txt", yes)
    diff = await wire.call("GetDiff", w.GetDiffRequest(session_id=session.id))
    assert list(diff.paths) == ["gone.txt", "notes/a.txt"] and not diff.truncated
    assert "--- /dev/null\n+++ b/notes/a.txt\n" in diff.diff
    assert "+two\n" in diff.diff and "+one" not in diff.diff
    assert "--- a/gone.txt\n+++ /dev/null\n" in diff.diff and "-bye\n" in diff.diff
    assert "keep.txt" not in diff.diff


@pytest.mark.parity
async def test_server_info_says_what_the_server_is_and_speaks(wire, settings):
    info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
    assert (info.protocol, info.protocol_revision) == ("blitz.v1", 6)
    assert [(a.name, a.kind) for a in info.agents] == [("blitz", "builtin")]
    assert info.default_agent == "blitz"
    assert not info.repositories  # no --repo-allow: no session starts from a repository
    assert info.server_version and info.default_model == settings.model
    assert "demo" in info.models
    assert info.limits["turn_text_chars"] == 256 * 1024
    assert info.limits["event_bytes"] == 1024 * 1024
    if wire.name != "core":  # assembled by the server: the ports' own limits
        assert info.limits["request_bytes"] == 8 * 1024 * 1024
        assert info.limits["image_bytes"] == 5 * 1024 * 1024
    shared = settings.database.startswith("postgresql")
    assert ("replicas" in info.features) == shared
    assert "tokens" not in info.features


async def _run_deciding(wire, stream, session_id: str) -> list[t.TurnEvent]:
    """A turn's stream to its end, approving each request once."""
    events = []
    async for event in stream:
        events.append(event)
        if event.HasField("approval_request"):
            await wire.decide(session_id, event, t.DECISION_ONCE)
    return events


@pytest.mark.parity
async def test_a_proposed_plan_is_rejected_with_feedback_or_accepted_by_its_id(wire, settings):
    session = await wire.create_session()
    workspace = settings.workspace_root / session.workspace
    plan_turn = "todo: make file; check\n$ touch planned.txt"
    first = await wire.run_all(session.id, plan_turn, plan=True)
    [proposed] = [e.plan_proposed for e in first if e.HasField("plan_proposed")]
    assert proposed.plan_id == first[0].turn_id
    assert [task.content for task in proposed.tasks][:2] == ["make file", "check"]
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.plan_id == proposed.plan_id

    reject = s.RejectPlanRequest(
        session_id=session.id, plan_id=proposed.plan_id, feedback="call it chosen.txt"
    )
    await wire.call("RejectPlan", reject)
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.plan_id == ""
    watched = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    decision = watched[-1].plan_decision
    assert (decision.plan_id, decision.approved, decision.feedback) == (
        proposed.plan_id,
        False,
        "call it chosen.txt",
    )
    assert watched[-1].turn_id == ""
    await expect_error(wire.call("RejectPlan", reject), "failed_precondition", "NO_PENDING_PLAN")
    accept = s.AcceptPlanRequest(session_id=session.id, plan_id=proposed.plan_id)
    await expect_error(
        _run_deciding(wire, wire.stream("AcceptPlan", accept), session.id),
        "failed_precondition",
        "NO_PENDING_PLAN",
    )

    # The next turn's model is told of the feedback; then a new proposal is accepted.
    second = await wire.run_all(session.id, plan_turn, plan=True)
    [again] = [e.plan_proposed for e in second if e.HasField("plan_proposed")]
    accept = s.AcceptPlanRequest(session_id=session.id, plan_id=again.plan_id)
    done = await _run_deciding(wire, wire.stream("AcceptPlan", accept), session.id)
    [approved] = [e.plan_decision for e in done if e.HasField("plan_decision")]
    assert approved.approved and approved.plan_id == again.plan_id
    assert done[0].HasField("accepted") and done[0].accepted.turn.accepted
    assert not done[-1].finished.HasField("error")
    assert (workspace / "planned.txt").exists()
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.plan_id == "", "carried out: no longer open"
    summary = (await wire.run_all(session.id, "/compact", command=True))[-1].finished.output
    assert "rejected the plan you proposed. Their feedback: call it chosen.txt" in summary


async def test_a_fork_is_possible_at_a_sessions_last_20_turns_only(wire):
    session = await wire.create_session()
    turns = [(await wire.run_all(session.id, f"turn {i}"))[0].turn_id for i in range(21)]
    fork = s.ForkSessionRequest(session_id=session.id, turn_id=turns[1])
    assert (await wire.call("ForkSession", fork)).id, "the 20th latest"
    error = await expect_error(
        wire.call("ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=turns[0])),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert (error.metadata["field"], error.metadata["limit"]) == ("turn_id", "20")
