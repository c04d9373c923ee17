"""Task lists have stable ids; approvals and questions name the task they belong to."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from google.protobuf import json_format

from blitz.agent.tasks import TaskList, TodoItem
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


def listed(tasks: list[turn_pb2.Task]) -> list[tuple[str, str, str]]:
    return [(t.id, t.content, t.status) for t in tasks]


def test_new_items_are_numbered_in_order() -> None:
    tasks = TaskList()
    assert listed(tasks.replace([TodoItem("a"), TodoItem("b")])) == [
        ("1", "a", "pending"),
        ("2", "b", "pending"),
    ]


def test_an_update_keeps_ids_by_content_and_never_reuses_one() -> None:
    tasks = TaskList()
    tasks.replace([TodoItem("a"), TodoItem("b"), TodoItem("c")])
    # "b" removed, "a" moved and started, "d" new: it gets 4, not the freed 2.
    updated = tasks.replace([TodoItem("c"), TodoItem("a", "in_progress"), TodoItem("d")])
    assert listed(updated) == [
        ("3", "c", "pending"),
        ("1", "a", "in_progress"),
        ("4", "d", "pending"),
    ]


def test_an_id_the_model_passes_back_wins_over_a_content_match() -> None:
    tasks = TaskList()
    tasks.replace([TodoItem("write tests"), TodoItem("run them")])
    # Item 2 reworded, with its id: still 2.
    updated = tasks.replace([TodoItem("write tests", id="1"), TodoItem("run all tests", id="2")])
    assert listed(updated) == [("1", "write tests", "pending"), ("2", "run all tests", "pending")]


def test_the_current_task_is_the_first_in_progress_else_the_fallback() -> None:
    tasks = TaskList(prefix="tester.", fallback="2")
    assert tasks.current() == "2"
    tasks.replace([TodoItem("a", "completed"), TodoItem("b", "in_progress"), TodoItem("c")])
    assert tasks.current() == "tester.2"


async def test_todo_gives_each_item_an_id_in_the_event_and_the_result(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run("todo: plan it; build it", io=io)
    [tasks] = io.of_kind("tasks")
    assert listed(list(tasks.tasks.items)) == [
        ("1", "plan it", "pending"),
        ("2", "build it", "pending"),
    ]
    [result] = io.of_kind("tool_result")
    assert json_format.MessageToDict(result.tool_result.result)["tasks"] == [
        {"id": "1", "content": "plan it", "status": "pending"},
        {"id": "2", "content": "build it", "status": "pending"},
    ]


async def test_doing_starts_an_item_and_completes_the_one_before(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run("todo: a; b; c\ndoing: 1\ndoing: 2\ndone: 2", io=io)
    lists = [listed(list(e.tasks.items)) for e in io.of_kind("tasks")]
    assert [[status for _, _, status in items] for items in lists] == [
        ["pending", "pending", "pending"],
        ["in_progress", "pending", "pending"],
        ["completed", "in_progress", "pending"],
        ["completed", "completed", "pending"],
    ]
    assert {ids for items in lists for ids, _, _ in items} == {"1", "2", "3"}


async def test_an_approval_names_the_current_task_and_the_main_agent(
    driver: Driver, io: RecordingIO
) -> None:
    await driver.run("todo: build; test\ndoing: 2\n$ echo testing", io=io)
    [park] = driver.parks
    request = park.requests[0].approval_request
    assert (request.task_id, request.agent) == ("2", "")


async def test_an_approval_outside_any_task_has_no_task_id(driver: Driver, io: RecordingIO) -> None:
    await driver.run("todo: build; test\n$ echo testing", io=io)
    assert driver.parks[0].requests[0].approval_request.task_id == ""


async def test_a_question_names_the_current_task(driver: Driver, io: RecordingIO) -> None:
    await driver.run("todo: pick a colour; paint\ndoing: 1\nask: Which? [red|blue]", io=io)
    question = driver.parks[0].requests[0].question
    assert (question.task_id, question.agent) == ("1", "")


async def test_the_current_task_survives_a_park_and_resume_from_bytes(
    driver: Driver, io: RecordingIO
) -> None:
    """The second approval comes after a resume in a fresh Agent: the list is rebuilt."""
    await driver.run("todo: a; b\ndoing: 2\n$ echo one\n$ echo two", io=io)
    assert [p.requests[0].approval_request.task_id for p in driver.parks] == ["2", "2"]


async def test_ids_stay_stable_across_turns_of_a_session(
    driver: Driver, make_io: Callable[[], RecordingIO]
) -> None:
    first = await driver.run("todo: a; b", io=make_io())
    io = make_io()
    await driver.run("todo: b; c", io=io, history=first.history)
    [tasks] = io.of_kind("tasks")
    assert listed(list(tasks.tasks.items)) == [("2", "b", "pending"), ("3", "c", "pending")]
