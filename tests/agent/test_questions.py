"""ask_user parks with a Question; the answer resumes the turn from the history bytes alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import json_format

from blitz.agent import Agent
from blitz.ports import AnswerResult, Completed, Parked

if TYPE_CHECKING:
    from conftest import RecordingIO


async def ask(workspace: Path, io: RecordingIO, prompt: str) -> Parked:
    parked = await Agent().start(
        io=io, model="demo", workspace=workspace, history=None, prompt=prompt
    )
    assert isinstance(parked, Parked)
    return parked


async def answer(workspace: Path, io: RecordingIO, parked: Parked, *answers: str) -> Completed:
    # A fresh Agent, given nothing but bytes: as after a restart or on another replica.
    history = bytes(parked.history)
    request_id = parked.requests[0].question.request_id
    del parked
    done = await Agent().resume(
        io=io,
        model="demo",
        workspace=workspace,
        history=history,
        results={request_id: AnswerResult(answers=answers)},
    )
    assert isinstance(done, Completed)
    return done


async def test_single_choice_question(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(workspace, io, "ask: Which colour? [red|green|blue]")
    [event] = parked.requests
    question = event.question
    assert (question.question, list(question.options), question.multi_select) == (
        "Which colour?",
        ["red", "green", "blue"],
        False,
    )
    done = await answer(workspace, io, parked, "green")
    assert done.output == "answer: green"
    [result] = io.of_kind("tool_result")
    assert result.tool_result.id == question.request_id
    assert json_format.MessageToDict(result.tool_result.result) == {"answers": ["green"]}


async def test_multi_select_question(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(workspace, io, "ask+: Toppings? [cheese|ham|olives]")
    assert parked.requests[0].question.multi_select
    done = await answer(workspace, io, parked, "cheese", "olives")
    assert done.output == "answer: cheese, olives"


async def test_free_text_question(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(workspace, io, "ask: What should the file be called?")
    question = parked.requests[0].question
    assert list(question.options) == []
    done = await answer(workspace, io, parked, "notes.md")
    assert done.output == "answer: notes.md"


async def test_no_answer_is_reported_to_the_model(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(workspace, io, "ask: Still there?")
    done = await answer(workspace, io, parked)
    assert done.output == "answer: (none came)"


async def resume(workspace: Path, io: RecordingIO, parked: Parked, result: AnswerResult) -> str:
    history = bytes(parked.history)
    request_id = parked.requests[0].question.request_id
    done = await Agent().resume(
        io=io, model="demo", workspace=workspace, history=history, results={request_id: result}
    )
    assert isinstance(done, Completed)
    return done.output


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "seats": {"type": "integer", "minimum": 1, "maximum": 5},
        "diet": {"type": "array", "items": {"type": "string", "enum": ["vegan", "halal"]}},
    },
    "required": ["name", "seats"],
}


async def test_a_forms_values_are_the_answer_whole_numbers_whole(
    workspace: Path, io: RecordingIO
) -> None:
    """The values come through a Struct, whose numbers are doubles: 3.0 reads as 3."""
    parked = await ask(
        workspace, io, "call ask_user " + json.dumps({"question": "Book?", "form": FORM})
    )
    values = {"seats": 3.0, "name": "Ada", "diet": ["vegan"]}
    output = await resume(workspace, io, parked, AnswerResult(values=values))
    assert output == 'answer: diet=["vegan"], name=Ada, seats=3'


async def test_a_declined_form_is_said_to_be_declined(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(
        workspace, io, "call ask_user " + json.dumps({"question": "Book?", "form": FORM})
    )
    output = await resume(workspace, io, parked, AnswerResult(declined=True))
    assert output == "answer: declined the form"


async def test_ask_with_options_separated_by_commas_offers_each(
    workspace: Path, io: RecordingIO
) -> None:
    parked = await ask(workspace, io, "ask: ok? [a, b]")
    assert list(parked.requests[0].question.options) == ["a", "b"]
    assert await resume(workspace, io, parked, AnswerResult(answers=("b",))) == "answer: b"


async def test_question_then_command_parks_twice(workspace: Path, io: RecordingIO) -> None:
    parked = await ask(workspace, io, "ask: Go? [yes|no]\n$ echo went")
    history = bytes(parked.history)
    second = await Agent().resume(
        io=io,
        model="demo",
        workspace=workspace,
        history=history,
        results={parked.requests[0].question.request_id: AnswerResult(answers=("yes",))},
    )
    assert isinstance(second, Parked)
    assert second.requests[0].approval_request.detail == "echo went"


def test_the_model_is_told_a_forms_whole_numbers_whole() -> None:
    from blitz.agent.parking import answer_result

    told = answer_result(AnswerResult(values={"seats": 3.0, "ratio": 0.5, "picks": [2.0]}))
    assert json.dumps(told) == '{"values": {"seats": 3, "ratio": 0.5, "picks": [2]}}'
