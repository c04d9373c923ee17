"""The Turn's fields through the session service: plan and accept, read_only, aside, images,
server commands."""

from __future__ import annotations

import asyncio

import pytest
from support.events import kinds
from support.images import PNG
from support.wire import decide, drive, expect_error, open_wire, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


async def test_a_plan_is_proposed_without_acting_then_carried_out_when_accepted(wire, settings):
    session = await wire.create_session()
    workspace = settings.workspace_root / session.workspace
    proposal = await wire.run_all(
        session.id, "todo: make file; check\n$ touch planned.txt", plan=True
    )
    assert "approval_request" not in kinds(proposal)
    assert not (workspace / "planned.txt").exists()
    assert "tasks" in kinds(proposal)
    assert proposal[-1].finished.output
    assert not proposal[-1].finished.HasField("error")

    done = await drive(
        wire, session.id, "", decide(wire, session.id, t.DECISION_ONCE), accepted=True
    )
    assert "approval_request" in kinds(done)
    assert (workspace / "planned.txt").exists()
    # Accepted by the Turn's flag, told as AcceptPlan tells it: every watcher learns it.
    decided = [e.plan_decision for e in done if e.HasField("plan_decision")]
    assert len(decided) == 1 and decided[0].approved
    assert decided[0].plan_id == proposal[-1].turn_id

    await expect_error(
        wire.run_all(session.id, "", accepted=True), "failed_precondition", "NO_PENDING_PLAN"
    )


async def test_read_only_refuses_without_asking_and_gives_the_reason(wire, settings):
    session = await wire.create_session()
    events = await wire.run_all(session.id, "$ touch nope.txt", read_only="release freeze")
    assert "approval_request" not in kinds(events)
    assert not (settings.workspace_root / session.workspace / "nope.txt").exists()
    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert results and "release freeze" in str(results[0].result)
    assert not events[-1].finished.HasField("error")


async def test_an_aside_runs_beside_a_parked_turn_and_is_not_recorded(wire):
    session = await wire.create_session()
    main = wire.run(session.id, "$ echo main")
    parked = await until(main, "approval_request")
    aside = await wire.run_all(session.id, "what is going on?", aside=True)
    assert not aside[-1].finished.HasField("error")
    assert aside[0].turn_id != parked.turn_id
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_PARKED and got.turn_id == parked.turn_id
    refused = await wire.run_all(session.id, "$ echo sneaky", aside=True)
    assert "approval_request" not in kinds(refused)
    await wire.decide(session.id, parked, t.DECISION_ONCE)
    rest = [e async for e in main]
    assert rest[-1].HasField("finished") and not rest[-1].finished.HasField("error")
    # An aside leaves no trace in the history (the demo's summary lists what was asked).
    await wire.run_all(session.id, "a side note", aside=True)
    compacted = await wire.run_all(session.id, "/compact", command=True)
    summary = compacted[-1].finished.output
    assert "echo main" in summary
    assert "side note" not in summary and "what is going on" not in summary


async def test_an_aside_leaves_the_task_list_alone_and_closing_the_session_stops_it(wire):
    session = await wire.create_session()
    await wire.run_all(session.id, "todo: real-1; real-2")
    await wire.run_all(session.id, "todo: side-x; side-y", aside=True)
    tasks = await wire.run_all(session.id, "/tasks", command=True)
    assert "real-1" in tasks[-1].finished.output and "side-x" not in tasks[-1].finished.output

    events = []
    async with asyncio.timeout(10):
        async for event in wire.run(session.id, "stream: 200000", aside=True):
            events.append(event)
            if len(events) == 3:
                await wire.call("CloseSession", s.CloseSessionRequest(session_id=session.id))
    assert events[-1].finished.error.reason == "CANCELLED"


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_request_past_what_a_port_reads_is_refused_by_the_transport(server, kind):
    """Past what either port reads at all (8 MiB), the transport refuses it."""
    wire = open_wire(kind, server)
    try:
        session = await wire.create_session()
        huge = w.UploadImageRequest(session_id=session.id, data=PNG + b"\0" * 9_000_000)
        with pytest.raises(BlitzError) as err:
            await wire.call("UploadImage", huge)
    finally:
        await wire.close()
    assert err.value.code == "resource_exhausted"
    assert err.value.reason == "REQUEST_TOO_LARGE", "a refusal carries its ErrorInfo"
    assert err.value.metadata["limit"] == str(8 * 2**20)


@pytest.mark.parity
async def test_asides_with_one_turn_id_in_two_sessions_are_cancelled_apart(wire):
    first, second = await wire.create_session(), await wire.create_session()
    runs = [
        wire.run(sid.id, "stream: 200000", turn_id="t_mine", aside=True) for sid in (first, second)
    ]
    for run in runs:
        await until(run, "text")

    async def read_to_end(run) -> list[t.TurnEvent]:
        return [e async for e in run]

    # Both read all along, so that neither is cut off as a slow consumer.
    mine, other = (asyncio.create_task(read_to_end(run)) for run in runs)
    cancelled = await wire.call("Cancel", s.CancelRequest(session_id=first.id, turn_id="t_mine"))
    assert cancelled.turn_id == "t_mine"
    async with asyncio.timeout(30):
        ended = await mine
    assert ended[-1].finished.error.reason == "CANCELLED"
    assert not other.done(), "the other session's aside streams on"
    await wire.call("Cancel", s.CancelRequest(session_id=second.id, turn_id="t_mine"))
    async with asyncio.timeout(30):
        assert (await other)[-1].finished.error.reason == "CANCELLED"


@pytest.mark.parity
async def test_uploaded_images_reach_the_model_and_bad_uploads_are_refused(wire):
    session = await wire.create_session()
    uploaded = await wire.call(
        "UploadImage", w.UploadImageRequest(session_id=session.id, data=PNG, media_type="image/png")
    )
    assert uploaded.image_id and uploaded.size == len(PNG)
    events = await wire.run_all(
        session.id, "what is in this picture?", image_ids=[uploaded.image_id]
    )
    assert "image/png" in events[-1].finished.output

    for request, field in [
        (
            w.UploadImageRequest(session_id=session.id, data=PNG, media_type="image/tiff"),
            "media_type",
        ),
        (
            w.UploadImageRequest(session_id=session.id, data=b"not a png", media_type="image/png"),
            "data",
        ),
        (w.UploadImageRequest(session_id=session.id, data=b"", media_type="image/png"), "data"),
    ]:
        with pytest.raises(BlitzError) as err:
            await wire.call("UploadImage", request)
        assert err.value.code == "invalid_argument" and err.value.metadata["field"] == field
    with pytest.raises(BlitzError) as err:
        await wire.run_all(session.id, "look", image_ids=["img_nope"])
    assert err.value.metadata["field"] == "turn.image_ids"

    # Up to the core's 5 MiB limit, past both transports' 4 MiB defaults; beyond it, the
    # core's own error.
    for size, accepted in [(4_700_000, True), (5_400_000, False)]:
        big = PNG + b"\0" * (size - len(PNG))
        request = w.UploadImageRequest(session_id=session.id, data=big, media_type="image/png")
        if accepted:
            assert (await wire.call("UploadImage", request)).size == size
        else:
            with pytest.raises(BlitzError) as err:
                await wire.call("UploadImage", request)
            assert err.value.metadata["field"] == "data"

    assert (await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))).id


async def test_server_commands(wire):
    session = await wire.create_session()

    async def command(text: str) -> str:
        events = await wire.run_all(session.id, text, command=True)
        assert events[0].HasField("accepted") and events[-1].HasField("finished")
        assert not events[-1].finished.HasField("error"), events[-1].finished.error
        return events[-1].finished.output

    help_text = await command("/help")
    assert all(f"/{name}" in help_text for name in ("usage", "tasks", "compact", "clear", "model"))
    assert await command("/tasks") == "No tasks."
    await wire.run_all(session.id, "todo: first; second")
    assert await command("/tasks") == "- [ ] first\n- [ ] second"
    assert "2 model calls" in await command("/usage")  # todo: a tool call, then the answer
    assert await command("/model") == "Model: demo"
    assert "Summary" in await command("/compact")
    assert "cleared" in await command("/clear")
    assert await command("/compact") == "Nothing to compact yet."
    with pytest.raises(BlitzError) as err:
        await wire.run_all(session.id, "/frobnicate", command=True)
    assert err.value.metadata["field"] == "turn.text"
    refused = await wire.run_all(session.id, "/model nosuch:model", command=True)
    assert refused[-1].finished.error.reason == "INVALID_ARGUMENT"
    assert refused[-1].finished.error.metadata["field"] == "model"
    assert await command("/model") == "Model: demo"


@pytest.mark.parity
async def test_workspace_files_can_be_listed_and_read_but_not_outside(wire, settings):
    session = await wire.create_session()
    root = settings.workspace_root / session.workspace
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    listed = await wire.call("ListFiles", w.ListFilesRequest(session_id=session.id))
    assert [(e.path, e.directory) for e in listed.entries] == [("src", True)]
    inner = await wire.call("ListFiles", w.ListFilesRequest(session_id=session.id, path="src"))
    assert [(e.path, e.size) for e in inner.entries] == [("src/app.py", 12)]
    read = await wire.call("ReadFile", w.ReadFileRequest(session_id=session.id, path="src/app.py"))
    assert read.content == b"print('hi')\n" and not read.truncated
    for path in ("../secret", "/etc/passwd", "a" * 300, "a/" * 2100):
        with pytest.raises(BlitzError) as err:
            await wire.call("ReadFile", w.ReadFileRequest(session_id=session.id, path=path))
        assert err.value.metadata["field"] == "path"
    await expect_error(
        wire.call("ReadFile", w.ReadFileRequest(session_id=session.id, path="missing.txt")),
        "not_found",
        "FILE_NOT_FOUND",
    )


async def test_prompt_replaces_text_and_context_html_is_reduced_to_text(wire):
    session = await wire.create_session()
    page = (
        "<html><head><script>var x=1</script></head>"
        "<body><h1>Release notes</h1><p>v2 ships</p></body></html>"
    )
    events = await wire.run_all(
        session.id,
        "shown to people",
        prompt="sent to the model",
        context=[
            t.ContextBlock(kind="page", title="Notes", url="https://example.com/n", html=page)
        ],
    )
    output = events[-1].finished.output
    assert "sent to the model" in output and "shown to people" not in output
    assert "Release notes" in output and "v2 ships" in output
    assert "var x" not in output and "<p>" not in output
