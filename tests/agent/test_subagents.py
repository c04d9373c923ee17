"""Delegation: a sub-agent's events are signed, its requests park the whole turn, and the
turn resumes from the parked bytes alone, with the sub-agent's answer reaching the parent."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from google.protobuf import json_format
from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings

from blitz.agent import Agent, DemoModel
from blitz.errors import BlitzError, Reason
from blitz.ports import AnswerResult, ApprovalResult, Completed, Parked, Resolution, TurnPolicy
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


def final(io: RecordingIO, kind: str) -> list[turn_pb2.TurnEvent]:
    """Events of `kind`, without partial ones."""
    events = io.of_kind(kind)
    if kind == "tool_call":
        return [e for e in events if not e.tool_call.partial]
    if kind == "text":
        return [e for e in events if not e.text.partial]
    return events


def delegate_call(io: RecordingIO) -> turn_pb2.ToolCall:
    [call] = [e.tool_call for e in final(io, "tool_call") if e.tool_call.name == "delegate"]
    return call


async def start(workspace: Path, io: RecordingIO, prompt: str, **kw: Any) -> Completed | Parked:
    return await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt=prompt, **kw
    )


async def resume(
    workspace: Path, io: RecordingIO, parked: Parked, results: dict[str, Resolution]
) -> Completed | Parked:
    # A fresh Agent given nothing but bytes: as after a restart or on another replica.
    return await Agent().resume(
        io=io, model="demo", workspace=workspace, history=bytes(parked.history), results=results
    )


async def test_a_delegated_command_parks_the_turn_on_the_sub_agents_approval(
    workspace: Path, io: RecordingIO
) -> None:
    parked = await start(workspace, io, "delegate tester: $ touch made.txt")
    assert isinstance(parked, Parked)
    [event] = parked.requests
    request = event.approval_request
    parent = delegate_call(io)
    [sub_call] = [e for e in final(io, "tool_call") if e.author == "tester"]
    # The request id is the sub-agent's call id, made unique in the turn by its parent's.
    assert request.request_id == f"{parent.id}/{sub_call.tool_call.id.split('/', 1)[1]}"
    assert sub_call.tool_call.id == request.request_id
    assert (event.author, request.agent, request.tool, request.detail) == (
        "tester",
        "tester",
        "run_command",
        "touch made.txt",
    )
    assert request.scope_label == "command: touch made.txt"
    assert json_format.MessageToDict(parent.args) == {
        "agent": "tester",
        "task": "$ touch made.txt",
    }
    assert not (workspace / "made.txt").exists()


async def test_an_approved_delegated_command_runs_after_a_resume_from_bytes(
    workspace: Path, io: RecordingIO
) -> None:
    parked = await start(workspace, io, "delegate tester: $ echo hi > made.txt\nthanks")
    assert isinstance(parked, Parked)
    request_id = parked.requests[0].approval_request.request_id
    done = await resume(workspace, io, parked, {request_id: ApprovalResult(approved=True)})
    assert isinstance(done, Completed)
    assert (workspace / "made.txt").read_text() == "hi\n"
    # The sub-agent's answer is the delegate call's result, and the parent reports it.
    assert done.output == "You said: thanks\ntester: $ echo hi > made.txt -> exit 0"
    [sub_result, parent_result] = final(io, "tool_result")
    assert (sub_result.author, sub_result.tool_result.id) == ("tester", request_id)
    assert json_format.MessageToDict(sub_result.tool_result.result)["exit_code"] == 0
    assert parent_result.author == ""
    assert json_format.MessageToDict(parent_result.tool_result.result) == {
        "agent": "tester",
        "output": "$ echo hi > made.txt -> exit 0",
    }
    # Every event the sub-agent produced is signed with its name.
    texts = [(e.author, e.text.text) for e in final(io, "text")]
    assert ("tester", "$ echo hi > made.txt -> exit 0") in texts
    assert texts[-1][0] == ""
    # The session history keeps the sub-agent's answer, not its parked state.
    assert b"blitz_delegations" in parked.history
    assert b"blitz_delegations" not in done.history


async def test_a_denial_reaches_the_sub_agent_and_its_answer_the_parent(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run(
        "delegate tester: $ touch made.txt",
        io=io,
        decide=lambda r: ApprovalResult(approved=False, reason="not on a Friday"),
    )
    assert not (driver.workspace / "made.txt").exists()
    assert done.output == "tester: run_command: denied: not on a Friday"


async def test_an_edited_command_is_what_the_sub_agent_runs_and_shows(
    driver: Driver, io: RecordingIO
) -> None:
    edited = "echo edited > out.txt"
    done = await driver.run(
        "delegate tester: $ echo original > out.txt",
        io=io,
        decide=lambda r: ApprovalResult(approved=True, command=edited),
    )
    assert (driver.workspace / "out.txt").read_text() == "edited\n"
    shown = [e for e in final(io, "tool_call") if e.author == "tester"]
    assert [json_format.MessageToDict(e.tool_call.args)["command"] for e in shown] == [
        "echo original > out.txt",
        edited,
    ]
    assert f"tester: $ {edited} -> exit 0" in done.output


async def test_a_sub_agent_that_parks_twice_resumes_with_every_resolution_of_the_turn(
    workspace: Path, io: RecordingIO
) -> None:
    """The core hands over all of the turn's resolutions; earlier ones are skipped."""
    prompt = "delegate builder:\n~~~\n$ echo one > a.txt\n$ echo two > b.txt\n~~~"
    outcome = await start(workspace, io, prompt)
    results: dict[str, Resolution] = {}
    parks = 0
    while isinstance(outcome, Parked):
        parks += 1
        for event in outcome.requests:
            assert event.approval_request.agent == "builder"
            results[event.approval_request.request_id] = ApprovalResult(approved=True)
        outcome = await resume(workspace, io, outcome, dict(results))
    assert parks == 2
    assert (workspace / "a.txt").read_text() == "one\n"
    assert (workspace / "b.txt").read_text() == "two\n"
    assert outcome.output == ("builder: $ echo one > a.txt -> exit 0\n$ echo two > b.txt -> exit 0")
    # The parent's delegate call was shown once, not again on each resume.
    assert len([e for e in final(io, "tool_call") if e.tool_call.name == "delegate"]) == 1


async def test_a_sub_agents_question_parks_the_turn_and_its_answer_comes_back(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run(
        "delegate painter: ask: Which colour? [red|blue]",
        io=io,
        decide=lambda r: AnswerResult(answers=("blue",)),
    )
    question = driver.parks[0].requests[0]
    assert (question.author, question.question.agent, question.question.question) == (
        "painter",
        "painter",
        "Which colour?",
    )
    assert question.question.request_id.startswith(delegate_call(io).id + "/")
    assert done.output == "painter: answer: blue"


async def test_a_sub_agents_task_is_its_own_in_progress_item_else_the_parents(
    driver: Driver, io: RecordingIO
) -> None:
    prompt = (
        "todo: build; test\ndoing: 2\n"
        "delegate tester:\n~~~\n$ echo before\ntodo: unit; e2e\ndoing: 2\n$ echo during\n~~~"
    )
    await driver.run(prompt, io=io)
    assert [p.requests[0].approval_request.task_id for p in driver.parks] == ["2", "tester.2"]
    sub_lists = [e for e in io.of_kind("tasks") if e.author == "tester"]
    assert [t.id for t in sub_lists[-1].tasks.items] == ["tester.1", "tester.2"]


async def test_a_rule_approves_a_sub_agents_action_without_parking(
    driver: Driver, io: RecordingIO
) -> None:
    io.rules = {"command: echo ruled"}
    done = await driver.run("delegate tester: $ echo ruled", io=io)
    assert driver.parks == []
    [asked] = io.asked
    assert asked.agent == "tester"
    assert asked.request_id.startswith(delegate_call(io).id + "/")
    assert done.output == "tester: $ echo ruled -> exit 0\nruled"


async def test_read_only_refuses_a_sub_agents_command_as_the_main_agents(
    workspace: Path, io: RecordingIO
) -> None:
    done = await start(
        workspace,
        io,
        "delegate tester: $ touch made.txt",
        policy=TurnPolicy(read_only="just looking"),
    )
    assert isinstance(done, Completed)
    assert done.output == "tester: run_command: error: just looking"
    assert not (workspace / "made.txt").exists()


async def test_an_aside_refuses_a_sub_agents_action_instead_of_asking(
    workspace: Path, io: RecordingIO
) -> None:
    done = await start(
        workspace, io, "delegate tester: $ touch made.txt", policy=TurnPolicy(aside=True)
    )
    assert isinstance(done, Completed)
    assert "tester: run_command: error: this is a side question" in done.output


async def test_plan_mode_proposes_the_delegation_instead_of_running_it(
    workspace: Path, io: RecordingIO
) -> None:
    done = await start(workspace, io, "delegate tester: $ pytest -q", policy=TurnPolicy(plan=True))
    assert isinstance(done, Completed)
    assert "1. have tester do: $ pytest -q" in done.output
    assert not [e for e in final(io, "tool_call") if e.tool_call.name == "delegate"]


class _ToolSpy(DemoModel):
    """The demo model, noting the tools each request offers."""

    def __init__(self) -> None:
        super().__init__()
        self.offered: list[set[str]] = []

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        self.offered.append({t.name for t in model_request_parameters.function_tools})
        async with super().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream


async def test_a_sub_agent_is_not_offered_delegate(workspace: Path, io: RecordingIO) -> None:
    spy = _ToolSpy()
    agent = Agent(models={"spy": spy})
    await agent.start(
        io=io, model="spy", workspace=workspace, history=None, prompt="delegate t: ls"
    )
    main_first, sub_first, sub_last, main_last = spy.offered
    assert "delegate" in main_first and "delegate" in main_last
    assert "delegate" not in sub_first and "delegate" not in sub_last
    assert sub_first == main_first - {"delegate"}


@pytest.mark.parametrize(
    ("results", "reason"),
    [
        (lambda rid, parent: {}, Reason.INVALID_ARGUMENT),
        (lambda rid, parent: {rid + "x": ApprovalResult(approved=True)}, Reason.REQUEST_NOT_FOUND),
        (lambda rid, parent: {parent: ApprovalResult(approved=True)}, Reason.REQUEST_NOT_FOUND),
        (lambda rid, parent: {rid: AnswerResult(answers=("yes",))}, Reason.INVALID_ARGUMENT),
    ],
    ids=["unresolved", "unknown id", "the delegate call itself", "wrong kind"],
)
async def test_resume_checks_the_sub_agents_requests(
    workspace: Path,
    io: RecordingIO,
    results: Callable[[str, str], dict[str, Resolution]],
    reason: Reason,
) -> None:
    parked = await start(workspace, io, "delegate tester: $ touch made.txt")
    assert isinstance(parked, Parked)
    request_id = parked.requests[0].approval_request.request_id
    with pytest.raises(BlitzError) as caught:
        await resume(workspace, io, parked, results(request_id, delegate_call(io).id))
    assert caught.value.reason == reason
    assert not (workspace / "made.txt").exists()
