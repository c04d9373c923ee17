"""The policy gate: every action's approval path, and its refusal under read_only, plan, aside."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from google.protobuf import json_format

from blitz.agent import Agent
from blitz.agent.parking import load_history
from blitz.agent.window import turn_starts
from blitz.ports import Completed, Parked, TurnPolicy
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO

EDIT = "edit a.txt\n```\nold line\n```\n```\nnew line\n```"

# prompt, kind, scope_label, and what the workspace looks like once it ran.
ACTIONS = {
    "command": ("$ touch made.txt", turn_pb2.ACTION_KIND_COMMAND, "command: touch made.txt"),
    "write": ("write made.txt\n```\nhi\n```", turn_pb2.ACTION_KIND_WRITE, "write: made.txt"),
    "edit": (EDIT, turn_pb2.ACTION_KIND_WRITE, "write: a.txt"),
    "delete": ("delete a.txt", turn_pb2.ACTION_KIND_DELETE, "delete: a.txt"),
}


def acted(workspace: Path, action: str) -> bool:
    if action in ("command", "write"):
        return (workspace / "made.txt").exists()
    if action == "edit":
        return (workspace / "a.txt").read_text() == "new line\n"
    return not (workspace / "a.txt").exists()


@pytest.fixture
def seeded(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("old line\n")
    return workspace


@pytest.mark.parametrize("action", ACTIONS)
async def test_each_action_parks_on_its_approval_then_acts(
    seeded: Path, driver: Driver, io: RecordingIO, action: str
) -> None:
    prompt, kind, scope = ACTIONS[action]
    await driver.run(prompt, io=io)
    [park] = driver.parks
    request = park.requests[0].approval_request
    assert (request.kind, request.scope_label) == (kind, scope)
    assert acted(seeded, action)


@pytest.mark.parametrize("action", ACTIONS)
async def test_a_rule_approves_without_parking(
    seeded: Path, driver: Driver, io: RecordingIO, action: str
) -> None:
    prompt, kind, scope = ACTIONS[action]
    io.rules = {scope}
    await driver.run(prompt, io=io)
    assert driver.parks == []
    assert [(a.kind, a.scope_label) for a in io.asked] == [(kind, scope)]
    assert acted(seeded, action)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        (TurnPolicy(read_only="release freeze"), "release freeze"),
        (TurnPolicy(aside=True), "side question"),
    ],
    ids=["read_only", "aside"],
)
async def test_read_only_and_aside_refuse_without_asking_and_say_why(
    seeded: Path, io: RecordingIO, action: str, policy: TurnPolicy, reason: str
) -> None:
    prompt = ACTIONS[action][0]
    done = await Agent().start(
        io=io, model="demo", workspace=seeded, history=None, prompt=prompt, policy=policy
    )
    assert isinstance(done, Completed)
    assert io.asked == []
    assert not acted(seeded, action)
    [result] = io.of_kind("tool_result")
    assert reason in json_format.MessageToDict(result.tool_result.result)["error"]


async def test_aside_questions_are_not_asked(workspace: Path, io: RecordingIO) -> None:
    done = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="ask: sure? [yes|no]",
        policy=TurnPolicy(aside=True),
    )
    assert isinstance(done, Completed)
    assert "side question" in done.output


async def test_plan_mode_proposes_the_actions_as_tasks_and_runs_none(
    seeded: Path, io: RecordingIO
) -> None:
    prompt = "todo: look around\nread a.txt\n$ touch made.txt\n" + EDIT + "\ndelete a.txt"
    done = await Agent().start(
        io=io,
        model="demo",
        workspace=seeded,
        history=None,
        prompt=prompt,
        policy=TurnPolicy(plan=True),
    )
    assert isinstance(done, Completed)
    assert io.asked == [] and (seeded / "a.txt").read_text() == "old line\n"
    assert not (seeded / "made.txt").exists()
    [tasks] = io.of_kind("tasks")
    assert [t.content for t in tasks.tasks.items] == [
        "look around",
        "run `touch made.txt`",
        "edit a.txt",
        "delete a.txt",
    ]
    assert "Proposed plan:\n1. look around\n2. run `touch made.txt`" in done.output
    assert "read a.txt:\nold line" in done.output
    # Only the tools that change nothing were offered.
    calls = {e.tool_call.name for e in io.of_kind("tool_call")}
    assert calls == {"read_file", "todo"}


async def test_accepting_a_demo_plan_carries_it_out(
    seeded: Path, driver: Driver, make_io: Callable[[], RecordingIO]
) -> None:
    proposal = await Agent().start(
        io=make_io(),
        model="demo",
        workspace=seeded,
        history=None,
        prompt="$ touch made.txt",
        policy=TurnPolicy(plan=True),
    )
    assert isinstance(proposal, Completed) and not (seeded / "made.txt").exists()
    io = make_io()
    done = await driver.run(
        "The user accepted the plan you proposed. Carry it out now.\n\nProposed plan:\n"
        "- run `touch made.txt`",
        io=io,
        history=proposal.history,
    )
    assert (seeded / "made.txt").exists()
    assert "carrying out the accepted plan" in done.output


async def test_plan_mode_still_parks_on_a_question(workspace: Path, io: RecordingIO) -> None:
    outcome = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="ask: which? [a|b]",
        policy=TurnPolicy(plan=True),
    )
    # Questions are fine in plan mode: they only read the user.
    assert isinstance(outcome, Parked)
    assert outcome.requests[0].HasField("question")


async def test_a_long_sessions_history_is_kept_to_its_last_turns(workspace, io) -> None:
    agent = Agent(history_turns=4)
    history = None
    for n in range(1, 6):
        done = await agent.start(
            io=io, model="demo", workspace=workspace, history=history, prompt=f"turn {n}"
        )
        assert isinstance(done, Completed)
        history = done.history
    kept = turn_starts(load_history(history))
    assert len(kept) == 3, "past 4 turns, the oldest go until a quarter is free again"
    (trimmed,) = [e.history_trimmed for e in io.of_kind("history_trimmed")]
    assert (trimmed.kept_turns, trimmed.reason) == (3, "history_turns")
    assert trimmed.dropped_messages > 0
    assert "turn 5" in done.output and "turn 1" not in history.decode()
