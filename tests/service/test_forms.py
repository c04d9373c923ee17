"""Questions with forms: asked by the agent or by an MCP server, answered with values a
form validates (or declined), refused when they do not fit; and the commands a client
can offer."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from google.protobuf import json_format, struct_pb2
from support.wire import Wire, expect_error, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

pytestmark = pytest.mark.engines("sqlite", "postgres")

NOTES_SERVER = Path(__file__).parents[1] / "agent" / "mcp_notes_server.py"
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "guests": {"type": "integer", "minimum": 1, "maximum": 12},
        "when": {"type": "string", "format": "date"},
        "diet": {"type": "array", "items": {"type": "string", "enum": ["vegan", "halal"]}},
        "terrace": {"type": "boolean"},
        "size": {"type": "string", "enum": ["small", "large"]},
    },
    "required": ["name", "guests"],
}


def struct(values: dict[str, object]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(values)
    return message


def ask(form: dict[str, object] = FORM) -> str:
    """The demo model's prompt that asks the user `form` through ask_user."""
    return "call ask_user " + json.dumps({"question": "Who is coming?", "form": form})


async def answer(wire: Wire, session_id: str, request_id: str, **fields: object) -> object:
    return await wire.call(
        "Answer", s.AnswerRequest(session_id=session_id, request_id=request_id, **fields)
    )


@pytest.mark.parity
async def test_a_form_is_answered_with_values_the_model_then_gets(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, ask())
    question = (await until(stream, "question")).question
    assert json_format.MessageToDict(question.form) == FORM
    values = {"name": "Ada", "guests": 4, "when": "2026-12-24", "diet": ["vegan"]}
    await answer(wire, session.id, question.request_id, values=struct(values))
    rest = [e async for e in stream]
    [resolution] = [e.resolution for e in rest if e.HasField("resolution")]
    assert json_format.MessageToDict(resolution.values) == values
    [result] = [e.tool_result for e in rest if e.HasField("tool_result")]
    assert json_format.MessageToDict(result.result)["values"]["name"] == "Ada"
    assert not rest[-1].finished.HasField("error")


@pytest.mark.parity
@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"guests": 2}, "values.name"),
        ({"name": "Ada", "guests": 40}, "values.guests"),
        ({"name": "Ada", "guests": 2, "when": "next week"}, "values.when"),
        ({"name": "Ada", "guests": 2, "diet": ["keto"]}, "values.diet"),
        ({"name": "Ada", "guests": 2, "size": "huge"}, "values.size"),
        ({"name": "Ada", "guests": 2, "pets": 1}, "values.pets"),
        ({"name": "Ada", "guests": "two"}, "values.guests"),
    ],
)
async def test_values_the_form_does_not_validate_are_refused_naming_the_field(wire, values, field):
    session = await wire.create_session()
    stream = wire.run(session.id, ask())
    question = (await until(stream, "question")).question
    error = await expect_error(
        answer(wire, session.id, question.request_id, values=struct(values)),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == field
    # Still open: a right answer goes through.
    await answer(wire, session.id, question.request_id, values=struct({"name": "A", "guests": 1}))
    assert not [e async for e in stream][-1].finished.HasField("error")


async def test_a_form_takes_values_or_a_decline_not_answers(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, ask())
    question = (await until(stream, "question")).question
    for fields, field in (
        ({"answers": ["Ada"]}, "answers"),
        ({}, "values"),
        ({"decline": True, "values": struct({"name": "x", "guests": 1})}, "values"),
    ):
        error = await expect_error(
            answer(wire, session.id, question.request_id, **fields),
            "invalid_argument",
            "INVALID_ARGUMENT",
        )
        assert error.metadata["field"] == field
    await answer(wire, session.id, question.request_id, decline=True)
    rest = [e async for e in stream]
    [resolution] = [e.resolution for e in rest if e.HasField("resolution")]
    assert resolution.declined
    [result] = [e.tool_result for e in rest if e.HasField("tool_result")]
    assert json_format.MessageToDict(result.result)["declined"] is True


async def test_a_question_without_a_form_takes_no_values(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "ask: which? [a|b]")
    question = (await until(stream, "question")).question
    error = await expect_error(
        answer(wire, session.id, question.request_id, values=struct({"x": 1})),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "values"
    await stream.aclose()


async def test_a_form_the_model_gets_wrong_is_its_tools_error_not_the_users(wire):
    session = await wire.create_session()
    nested = {"type": "object", "properties": {"where": {"type": "object"}}}
    events = await wire.run_all(session.id, ask(nested))
    assert not any(e.HasField("question") for e in events)
    [result] = [e.tool_result for e in events if e.HasField("tool_result")]
    assert "not one the user can be shown" in json_format.MessageToDict(result.result)["error"]


@pytest.fixture
def mcp_settings(settings, tmp_path: Path):
    config = tmp_path / "mcp.json"
    servers = {"notes": {"command": sys.executable, "args": [str(NOTES_SERVER)]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    return replace(settings, mcp_config=str(config))


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_an_mcp_servers_elicitation_round_trips_through_a_second_client(mcp_settings, kind):
    """A local MCP server asks for a booking mid-call; a client that did not start the
    turn answers the form, and the server gets the values."""
    from support.servers import serving

    async with serving(mcp_settings, kind) as wire:
        session = await wire.create_session()
        stream = wire.run(session.id, "call notes.book {}")
        await wire.decide_next(stream, session.id, t.DECISION_ONCE)
        question = (await until(stream, "question")).question
        assert question.mcp_server == "notes"
        form = json_format.MessageToDict(question.form)
        assert form["properties"]["guests"]["type"] == "integer"
        view = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
        assert [p.question.request_id for p in view.pending] == [question.request_id]
        error = await expect_error(
            answer(wire, session.id, question.request_id, values=struct({"name": "Ada"})),
            "invalid_argument",
            "INVALID_ARGUMENT",
        )
        assert error.metadata["field"] == "values.guests"
        values = struct({"name": "Ada", "guests": 3, "terrace": True})
        await answer(wire, session.id, question.request_id, values=values)
        rest = [e async for e in stream]
    [result] = [e.tool_result for e in rest if e.HasField("tool_result")]
    assert json_format.MessageToDict(result.result)["content"] == (
        "booked for Ada, 3 guests, on the terrace"
    )


@pytest.mark.parity
async def test_commands_are_advertised_by_the_server_and_per_session(wire):
    info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
    names = [c.name for c in info.commands]
    assert {"help", "usage", "model", "compact", "clear", "tasks"} <= set(names)
    [model] = [c for c in info.commands if c.name == "model"]
    assert model.arguments == "[provider:name]" and model.description
    session = await wire.create_session()
    listed = await wire.call("ListCommands", s.ListCommandsRequest(session_id=session.id))
    assert [c.name for c in listed.commands] == names
    await expect_error(
        wire.call("ListCommands", s.ListCommandsRequest(session_id="s_nobody")),
        "not_found",
        "SESSION_NOT_FOUND",
    )
