"""Actions park on an ApprovalRequest; the decision, its reason or an edited command win."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from google.protobuf import json_format
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from blitz.agent import Agent
from blitz.agent.parking import pending_calls
from blitz.errors import BlitzError, Reason
from blitz.ports import AnswerResult, ApprovalResult, Completed, Parked, Resolution
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


def deny(reason: str) -> Callable[[turn_pb2.TurnEvent], ApprovalResult]:
    return lambda request: ApprovalResult(approved=False, reason=reason)


async def test_command_parks_with_a_command_approval_request(
    workspace: Path, io: RecordingIO
) -> None:
    parked = await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt="$ touch made.txt"
    )
    assert isinstance(parked, Parked)
    [event] = parked.requests
    request = event.approval_request
    assert request.request_id == io.of_kind("tool_call")[-1].tool_call.id
    assert request.tool == "run_command"
    assert request.kind == turn_pb2.ACTION_KIND_COMMAND
    assert request.detail == "touch made.txt"
    assert request.scope_label == "command: touch made.txt"
    assert not (workspace / "made.txt").exists()


async def test_approved_command_runs_and_its_output_reaches_the_model(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run("$ echo hello > made.txt; cat made.txt", io=io)
    assert (driver.workspace / "made.txt").read_text() == "hello\n"
    assert "$ echo hello > made.txt; cat made.txt -> exit 0\nhello" in done.output
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["exit_code"] == 0


async def test_denied_command_does_not_run_and_the_reason_reaches_the_model(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run("$ touch made.txt", io=io, decide=deny("not on a Friday"))
    assert not (driver.workspace / "made.txt").exists()
    assert "run_command: denied: not on a Friday" in done.output
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result) == {
        "denied": True,
        "reason": "not on a Friday",
    }


async def test_edited_command_is_what_runs_and_what_events_show(
    driver: Driver, io: RecordingIO
) -> None:
    edited = "echo edited > out.txt"

    def decide(request: turn_pb2.TurnEvent) -> ApprovalResult:
        return ApprovalResult(approved=True, command=edited)

    done = await driver.run("$ echo original > out.txt", io=io, decide=decide)
    assert (driver.workspace / "out.txt").read_text() == "edited\n"
    final_calls = [e.tool_call for e in io.of_kind("tool_call") if not e.tool_call.partial]
    # Shown as requested before the park, then as edited right before it ran.
    assert [json_format.MessageToDict(c.args)["command"] for c in final_calls] == [
        "echo original > out.txt",
        edited,
    ]
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["command"] == edited
    assert f"$ {edited} -> exit 0" in done.output


async def test_an_edited_command_keeps_the_calls_other_arguments(
    driver: Driver, io: RecordingIO
) -> None:
    """Decide's command replaces the command only: `git` stays as the model asked it."""

    def decide(request: turn_pb2.TurnEvent) -> ApprovalResult:
        return ApprovalResult(approved=True, command="echo edited")

    await driver.run(
        'call run_command {"command": "echo original", "git": true}', io=io, decide=decide
    )
    final_calls = [e.tool_call for e in io.of_kind("tool_call") if not e.tool_call.partial]
    assert json_format.MessageToDict(final_calls[-1].args) == {
        "command": "echo edited",
        "git": True,
    }


async def test_write_asks_with_a_diff_then_writes(driver: Driver, io: RecordingIO) -> None:
    (driver.workspace / "a.txt").write_text("old line\nkept\n")
    done = await driver.run("write a.txt\n```\nnew line\nkept\n```", io=io)
    [park] = driver.parks
    request = park.requests[0].approval_request
    assert (request.tool, request.kind, request.detail, request.scope_label) == (
        "write_file",
        turn_pb2.ACTION_KIND_WRITE,
        "a.txt",
        "write: a.txt",
    )
    assert request.diff.splitlines() == [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,2 +1,2 @@",
        "-old line",
        "+new line",
        " kept",
    ]
    assert (driver.workspace / "a.txt").read_text() == "new line\nkept\n"
    assert "wrote a.txt (14 bytes)" in done.output


async def test_write_of_a_new_file_diffs_against_nothing(driver: Driver, io: RecordingIO) -> None:
    await driver.run("write sub/dir/new.txt\n```\nhi\n```", io=io)
    request = driver.parks[0].requests[0].approval_request
    assert request.diff.startswith("--- /dev/null\n+++ b/sub/dir/new.txt\n")
    assert (driver.workspace / "sub/dir/new.txt").read_text() == "hi\n"


async def test_denied_write_leaves_the_file_alone(driver: Driver, io: RecordingIO) -> None:
    (driver.workspace / "a.txt").write_text("old\n")
    done = await driver.run("write a.txt\n```\nnew\n```", io=io, decide=deny("keep it"))
    assert (driver.workspace / "a.txt").read_text() == "old\n"
    assert "write_file: denied: keep it" in done.output


async def test_delete_asks_with_the_removal_diff_then_deletes(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "gone.txt").write_text("bye\n")
    done = await driver.run("delete gone.txt", io=io)
    request = driver.parks[0].requests[0].approval_request
    assert (request.kind, request.detail, request.scope_label) == (
        turn_pb2.ACTION_KIND_DELETE,
        "gone.txt",
        "delete: gone.txt",
    )
    assert request.diff.splitlines()[-1] == "-bye"
    assert not (driver.workspace / "gone.txt").exists()
    assert "deleted gone.txt" in done.output


async def test_delete_of_a_missing_file_errors_without_asking(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run("delete nothing.txt", io=io)
    assert driver.parks == []
    assert "delete_file: error: no such file: nothing.txt" in done.output


async def test_later_directives_continue_after_a_denial(driver: Driver, io: RecordingIO) -> None:
    (driver.workspace / "a.txt").write_text("alpha\n")
    done = await driver.run("$ rm a.txt\nread a.txt", io=io, decide=deny("no"))
    assert isinstance(done, Completed)
    assert "run_command: denied: no" in done.output
    assert "read a.txt:\nalpha" in done.output


@pytest.mark.parametrize(
    ("results", "reason", "field"),
    [
        ({"not-a-request": ApprovalResult(approved=True)}, Reason.REQUEST_NOT_FOUND, None),
        ({}, Reason.INVALID_ARGUMENT, "results"),
        ({"{id}": AnswerResult(answers=("yes",))}, Reason.INVALID_ARGUMENT, "results"),
    ],
    ids=["unknown-request", "unresolved-request", "answer-for-an-approval"],
)
async def test_resume_refuses_results_that_do_not_fit_the_park(
    workspace: Path,
    io: RecordingIO,
    results: dict[str, Resolution],
    reason: Reason,
    field: str | None,
) -> None:
    parked = await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt="$ touch made.txt"
    )
    assert isinstance(parked, Parked)
    request_id = parked.requests[0].approval_request.request_id
    results = {key.format(id=request_id): value for key, value in results.items()}
    with pytest.raises(BlitzError) as caught:
        await Agent().resume(
            io=io, model="demo", workspace=workspace, history=parked.history, results=results
        )
    assert caught.value.reason is reason
    assert caught.value.metadata.get("field") == field
    assert not (workspace / "made.txt").exists()


def test_calls_answered_in_the_parking_step_are_not_pending() -> None:
    """A response may mix a call that ran (read) with one that parked (a command)."""
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("go")]),
        ModelResponse(
            parts=[
                ToolCallPart("read_file", {"path": "a"}, tool_call_id="read-1"),
                ToolCallPart("run_command", {"command": "ls"}, tool_call_id="cmd-1"),
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", {"content": ""}, tool_call_id="read-1")]),
    ]
    assert pending_calls(messages) == {"cmd-1": "run_command"}


async def test_results_settled_by_an_earlier_park_are_ignored(
    workspace: Path, io: RecordingIO
) -> None:
    """The core may hand every resolution of the turn to each resume; old ones are skipped."""
    first = await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt="$ echo one\n$ echo two"
    )
    assert isinstance(first, Parked)
    one = first.requests[0].approval_request.request_id
    results: dict[str, Resolution] = {one: ApprovalResult(approved=True)}
    second = await Agent().resume(
        io=io, model="demo", workspace=workspace, history=first.history, results=results
    )
    assert isinstance(second, Parked)
    results[second.requests[0].approval_request.request_id] = ApprovalResult(approved=True)
    done = await Agent().resume(
        io=io, model="demo", workspace=workspace, history=second.history, results=results
    )
    assert isinstance(done, Completed)
    assert "$ echo one -> exit 0\none\n$ echo two -> exit 0\ntwo" in done.output
    # The first command ran once.
    assert len(io.of_kind("tool_result")) == 2
