"""edit_file, search, run_command's live output, images and compaction with the demo model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import json_format

from blitz.agent import Agent
from blitz.ports import ImageInput, TurnPolicy

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


async def test_edit_replaces_one_exact_piece_after_a_write_approval_with_its_diff(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "a.py").write_text("x = 1\ny = 2\n")
    done = await driver.run("edit a.py\n```\ny = 2\n```\n```\ny = 3\n```", io=io)
    request = driver.parks[0].requests[0].approval_request
    assert request.scope_label == "write: a.py"
    assert "-y = 2\n+y = 3" in request.diff
    assert (driver.workspace / "a.py").read_text() == "x = 1\ny = 3\n"
    assert "edited a.py" in done.output


async def test_edit_fails_clearly_when_the_text_is_missing_or_ambiguous(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "a.py").write_text("same\nsame\n")
    done = await driver.run(
        "edit a.py\n```\nother\n```\n```\nx\n```\nedit a.py\n```\nsame\n```\n```\nx\n```", io=io
    )
    assert driver.parks == []
    assert "edit_file: error: old_string was not found in the file" in done.output
    assert "edit_file: error: old_string occurs 2 times" in done.output


async def test_search_finds_lines_across_the_workspace(driver: Driver, io: RecordingIO) -> None:
    (driver.workspace / "src").mkdir()
    (driver.workspace / "src/a.py").write_text("import os\nTODO: fix\n")
    (driver.workspace / "notes.md").write_text("nothing\nTODO: write\n")
    (driver.workspace / "bin.dat").write_bytes(b"\x00TODO")
    done = await driver.run("search: TODO", io=io)
    [result] = io.of_kind("tool_result")
    matches = json_format.MessageToDict(result.tool_result.result)["matches"]
    assert matches == ["notes.md:2: TODO: write", "src/a.py:2: TODO: fix"]
    assert driver.parks == [] and "2 matches" in done.output


async def test_command_output_streams_live_before_the_result(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run("$ echo one; echo two", io=io)
    [call] = [e for e in io.of_kind("tool_call") if not e.tool_call.partial]
    live = io.of_kind("tool_output")
    assert live and all(e.tool_output.id == call.tool_call.id for e in live)
    assert all(e.tool_output.name == "run_command" and not e.author for e in live)
    assert "".join(e.tool_output.output for e in live) == "one\ntwo\n"
    kinds = [e.WhichOneof("kind") for e in io.events]
    assert kinds.index("tool_call") < kinds.index("tool_output") < kinds.index("tool_result")
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["output"] == "one\ntwo\n"
    assert not result.tool_result.is_error and result.tool_result.HasField("duration")


async def test_the_demo_model_sees_attached_images(workspace: Path, io: RecordingIO) -> None:
    png = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 60
    done = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="look",
        policy=TurnPolicy(images=(ImageInput(data=png, media_type="image/png"),)),
    )
    assert done.output.startswith("I see 1 image (image/png, 68 bytes).")


async def test_compact_with_the_demo_model(driver: Driver, io: RecordingIO) -> None:
    first = await driver.run("hello there\nls", io=io)
    history, summary = await Agent().compact(io=io, model="demo", history=first.history)
    assert summary == "The user asked: hello there. Tool calls so far: 1."
    assert len(history) < len(first.history)
    again = await driver.run("and now?", io=io, history=history)
    assert again.output == "You said: and now?"


async def test_a_bad_search_pattern_is_an_error_result_in_our_words(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run('call search {"pattern": "a(b", "regex": true}', io=io)
    [result] = io.of_kind("tool_result")
    error = json_format.MessageToDict(result.tool_result.result)["error"]
    assert error == "not a valid regular expression (near position 1)"
