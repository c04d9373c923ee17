"""What a turn streams: text chunks then the whole text, thinking, tool calls, tasks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from google.protobuf import json_format

from blitz.ports import Completed

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


async def test_plain_text_is_echoed_in_partial_chunks_then_repeated_whole(
    driver: Driver, io: RecordingIO
) -> None:
    done = await driver.run("hello there\ngeneral kenobi", io=io)
    assert done.output == "You said: hello there general kenobi"
    partials = [e.text.text for e in io.of_kind("text") if e.text.partial]
    assert len(partials) > 2
    assert "".join(partials) == done.output
    assert io.final_texts() == [done.output]
    # The final event comes last, after every chunk.
    assert io.events[-1].text.repeat


async def test_stream_directive_streams_numbered_chunks(driver: Driver, io: RecordingIO) -> None:
    done = await driver.run("stream: 50", io=io)
    partials = [e.text.text for e in io.of_kind("text") if e.text.partial]
    assert partials == [f"chunk {i} " for i in range(50)]
    assert done.output == "".join(partials)


async def test_think_directive_streams_thought_text(driver: Driver, io: RecordingIO) -> None:
    done = await driver.run("think: weighing the options\nok", io=io)
    assert io.partial_text(thought=True) == "weighing the options"
    assert io.final_texts(thought=True) == ["weighing the options"]
    assert done.output == "You said: ok"
    # Thinking is not part of the answer.
    assert "weighing" not in io.partial_text()


async def test_tool_call_streams_partial_then_whole_then_result(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "a.txt").write_text("alpha\n")
    done = await driver.run("read a.txt", io=io)
    calls = io.of_kind("tool_call")
    results = io.of_kind("tool_result")
    assert [c.tool_call.partial for c in calls] == [True, True, False]
    final = calls[-1].tool_call
    assert final.name == "read_file"
    assert json_format.MessageToDict(final.args) == {"path": "a.txt"}
    assert len(results) == 1
    assert results[0].tool_result.id == final.id
    assert json_format.MessageToDict(results[0].tool_result.result) == {
        "path": "a.txt",
        "content": "alpha\n",
        "truncated": False,
    }
    # Order: the call, then its result, then the answer.
    kinds = [e.WhichOneof("kind") for e in io.events]
    assert kinds.index("tool_result") > len(kinds) - 1 - kinds[::-1].index("tool_call")
    assert "read a.txt:\nalpha" in done.output


async def test_ls_lists_the_workspace(
    driver: Driver, io: RecordingIO, make_io: Callable[[], RecordingIO]
) -> None:
    (driver.workspace / "src").mkdir()
    (driver.workspace / "b.txt").write_text("")
    done = await driver.run("ls", io=io)
    assert done.output == ".: b.txt src/"
    done = await driver.run("ls src", io=make_io())
    assert done.output == "src: "


async def test_todo_emits_the_task_list(driver: Driver, io: RecordingIO) -> None:
    done = await driver.run("todo: plan it; build it; ship it", io=io)
    [tasks] = io.of_kind("tasks")
    assert [(t.content, t.status) for t in tasks.tasks.items] == [
        ("plan it", "pending"),
        ("build it", "pending"),
        ("ship it", "pending"),
    ]
    assert "task list set (3 items)" in done.output


async def test_directives_run_in_order_one_tool_call_per_response(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "a.txt").write_text("alpha\n")
    done = await driver.run("read a.txt\nls\nthanks", io=io)
    names = [e.tool_call.name for e in io.of_kind("tool_call") if not e.tool_call.partial]
    assert names == ["read_file", "list_files"]
    assert len(io.usage) == 3
    assert done.output.splitlines()[0] == "You said: thanks"
    assert done.output.index("read a.txt") < done.output.index(".: a.txt")


async def test_history_carries_over_to_the_next_turn(
    driver: Driver, io: RecordingIO, make_io: Callable[[], RecordingIO]
) -> None:
    first = await driver.run("first turn", io=io)
    second = await driver.run("second turn", io=make_io(), history=first.history)
    assert isinstance(second, Completed)
    assert second.output == "You said: second turn"
    assert b"first turn" in second.history and b"second turn" in second.history


async def test_twenty_thousand_chunks_all_arrive(driver: Driver, io: RecordingIO) -> None:
    """The load-test prompt: every chunk is emitted, in order, then the whole text once."""
    done = await driver.run("stream: 20000", io=io)
    texts = io.of_kind("text")
    assert len(texts) == 20001
    assert texts[19999].text.text == "chunk 19999 "
    assert texts[-1].text.repeat and texts[-1].text.text == done.output
    assert io.usage[0].output == 40000
