"""The agent's side of TurnIO: steer text, stopping before a call, the ledger, cancellation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support.processes import running
from support.waiting import wait_until

from blitz.agent import Agent, resolve_model, validate_model
from blitz.agent.demo import DemoModel
from blitz.errors import BlitzError, Reason
from blitz.ports import ApprovalResult, Completed, ModelCallUsage, Parked

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


async def test_steer_queued_before_the_first_call_is_seen(driver: Driver, io: RecordingIO) -> None:
    io.steer = ["keep it short"]
    done = await driver.run("hello", io=io)
    assert done.output == "Noted: keep it short\nYou said: hello"


async def test_steer_arriving_mid_turn_is_seen_by_the_next_call(
    driver: Driver, io: RecordingIO
) -> None:
    def on_call(n: int) -> None:
        if n == 2:
            io.steer.append("use tabs, not spaces")

    io.on_model_call = on_call
    done = await driver.run("ls\nhello", io=io)
    assert done.output.startswith("Noted: use tabs, not spaces\nYou said: hello")
    # It is part of the history, so later calls and turns see it too.
    assert b"use tabs, not spaces" in done.history


async def test_steer_during_a_resumed_turn_is_seen(driver: Driver, io: RecordingIO) -> None:
    def decide(request: object) -> ApprovalResult:
        io.steer.append("after the approval")
        return ApprovalResult(approved=True)

    done = await driver.run("$ true\nok", io=io, decide=decide)
    assert "Noted: after the approval" in done.output


async def test_before_model_call_raising_stops_the_turn_before_any_call(
    driver: Driver, io: RecordingIO
) -> None:
    io.stop_after = (0, BlitzError(Reason.BUDGET_EXCEEDED, "budget spent"))
    with pytest.raises(BlitzError) as caught:
        await driver.run("hello", io=io)
    assert caught.value.reason is Reason.BUDGET_EXCEEDED
    assert io.usage == []
    assert io.of_kind("text") == []


async def test_before_model_call_raising_mid_turn_stops_it_there(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "a.txt").write_text("alpha\n")
    io.stop_after = (1, BlitzError(Reason.MAX_TURNS, "too many model calls"))
    with pytest.raises(BlitzError) as caught:
        await driver.run("read a.txt\nhello", io=io)
    assert caught.value.reason is Reason.MAX_TURNS
    # The first call and its tool ran; the second call never happened.
    assert len(io.usage) == 1
    assert len(io.of_kind("tool_result")) == 1
    assert "You said" not in io.partial_text()


async def test_every_model_call_is_recorded_once(driver: Driver, io: RecordingIO) -> None:
    await driver.run("ls\n$ true\nask: ok? [yes|no]\nfine", io=io)
    # ls, the command (parks), the question (parks), the final answer.
    assert io.model_calls == 4
    assert len(io.usage) == 4
    for entry in io.usage:
        assert entry.model == "demo"
        assert entry.input > 0 and entry.output > 0
        assert (entry.cost_usd, entry.priced) == (0.0, True)


async def test_demo_usage_is_deterministic(
    driver: Driver, make_io: Callable[[], RecordingIO]
) -> None:
    first, second = make_io(), make_io()
    await driver.run("hello there world", io=first)
    await driver.run("hello there world", io=second)
    assert first.usage == second.usage == [ModelCallUsage(model="demo", input=3, output=5)]


async def test_cancellation_kills_a_running_command(workspace: Path, io: RecordingIO) -> None:
    parked = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="$ exec sleep 30.0417",
    )
    assert isinstance(parked, Parked)
    request_id = parked.requests[0].approval_request.request_id
    turn = asyncio.create_task(
        Agent().resume(
            io=io,
            model="demo",
            workspace=workspace,
            history=parked.history,
            results={request_id: ApprovalResult(approved=True)},
        )
    )
    try:
        # Found by its command line: in a PID namespace of its own, `$$` means nothing here.
        assert await wait_until(lambda: running("sleep", "30.0417"), within=10)
    finally:
        turn.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert time.monotonic() - started < 5
    assert running("sleep", "30.0417") == []
    assert io.of_kind("tool_result") == []


async def test_sleep_30_is_killed_on_cancel(workspace: Path, io: RecordingIO) -> None:
    """The plain `$ sleep 30` of the README: cancelling the turn ends it promptly."""
    parked = await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt="$ sleep 30"
    )
    assert isinstance(parked, Parked)
    request_id = parked.requests[0].approval_request.request_id
    turn = asyncio.create_task(
        Agent().resume(
            io=io,
            model="demo",
            workspace=workspace,
            history=parked.history,
            results={request_id: ApprovalResult(approved=True)},
        )
    )
    await asyncio.sleep(0.3)
    assert not turn.done()
    turn.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert time.monotonic() - started < 5


def test_demo_model_resolves_and_validates() -> None:
    assert isinstance(resolve_model("demo"), DemoModel)
    validate_model("demo")
    Agent().validate_model("demo")


@pytest.mark.parametrize("name", ["", "no-such-model", "nope:thing", " demo"])
def test_unknown_models_are_invalid_arguments(name: str) -> None:
    for validate in (validate_model, Agent().validate_model):
        with pytest.raises(BlitzError) as caught:
            validate(name)
        assert caught.value.reason is Reason.INVALID_ARGUMENT
        assert caught.value.metadata["field"] == "model"


async def test_starting_with_an_unknown_model_fails_before_anything_happens(
    workspace: Path, io: RecordingIO
) -> None:
    with pytest.raises(BlitzError) as caught:
        await Agent().start(
            io=io, model="no-such-model", workspace=workspace, history=None, prompt="hi"
        )
    assert caught.value.metadata == {"field": "model"}
    assert io.model_calls == 0


async def test_unreadable_history_is_an_invalid_argument(workspace: Path, io: RecordingIO) -> None:
    first = await Agent().start(io=io, model="demo", workspace=workspace, history=None, prompt="a")
    assert isinstance(first, Completed)
    with pytest.raises(BlitzError) as caught:
        await Agent().start(
            io=io, model="demo", workspace=workspace, history=b"not json", prompt="b"
        )
    assert caught.value.metadata == {"field": "history"}
