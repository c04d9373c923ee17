"""Delegation through the session service: a sub-agent's approval parks the turn, any client
answers it, the sub-agent's events carry its name, and a restart mid-park loses nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from google.protobuf import json_format
from support.servers import parked_turn, serving
from support.wire import Wire, decide, drive, follow_until_finished

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


def by(events: list[t.TurnEvent], author: str, kind: str) -> list[t.TurnEvent]:
    """Final (non-partial) events of `kind` signed by `author`."""
    return [
        e
        for e in events
        if e.WhichOneof("kind") == kind
        and e.author == author
        and not (kind == "text" and e.text.partial)
        and not (kind == "tool_call" and e.tool_call.partial)
    ]


async def test_a_delegated_command_is_approved_and_its_events_name_the_sub_agent(
    wire: Wire, settings
):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "todo: build; test\ndoing: 2\ndelegate tester: $ echo tested > proof.txt",
        decide(wire, session.id, t.DECISION_ONCE),
    )
    [request] = [e for e in events if e.HasField("approval_request")]
    assert request.author == "tester"
    assert (request.approval_request.agent, request.approval_request.task_id) == ("tester", "2")
    assert request.approval_request.detail == "echo tested > proof.txt"
    [delegate] = by(events, "", "tool_call")[-1:]
    assert delegate.tool_call.name == "delegate"
    assert request.approval_request.request_id.startswith(delegate.tool_call.id + "/")

    [result] = by(events, "tester", "tool_result")
    assert result.tool_result.id == request.approval_request.request_id
    assert json_format.MessageToDict(result.tool_result.result)["exit_code"] == 0
    assert [e.text.text for e in by(events, "tester", "text")] == [
        "$ echo tested > proof.txt -> exit 0"
    ]
    [resolution] = [e.resolution for e in events if e.HasField("resolution")]
    assert resolution.request_id == request.approval_request.request_id

    finished = events[-1].finished
    assert not finished.HasField("error")
    assert "tester: $ echo tested > proof.txt -> exit 0" in finished.output
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "proof.txt").read_text() == "tested\n"


async def test_a_session_rule_from_a_sub_agents_approval_covers_the_next_delegation(
    wire: Wire, settings
):
    session = await wire.create_session()
    first = await drive(
        wire,
        session.id,
        "delegate tester: $ echo again >> log.txt",
        decide(wire, session.id, t.DECISION_SESSION),
    )
    assert len([e for e in first if e.HasField("approval_request")]) == 1
    second = await drive(wire, session.id, "delegate checker: $ echo again >> log.txt")
    assert not [e for e in second if e.HasField("approval_request")]
    [resolution] = [e.resolution for e in second if e.HasField("resolution")]
    assert resolution.via == "rule"
    assert not second[-1].finished.HasField("error")
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "log.txt").read_text() == "again\nagain\n"


async def test_a_sub_agents_question_is_answered_over_the_wire(wire: Wire):
    session = await wire.create_session()

    async def answer(event: t.TurnEvent) -> None:
        await wire.call(
            "Answer",
            s.AnswerRequest(
                session_id=session.id, request_id=event.question.request_id, answers=["blue"]
            ),
        )

    events = await drive(wire, session.id, "delegate painter: ask: Which? [red|blue]", answer)
    [question] = [e for e in events if e.HasField("question")]
    assert (question.author, question.question.agent) == ("painter", "painter")
    assert events[-1].finished.output == "painter: answer: blue"


async def test_a_delegated_approval_survives_a_restart_and_the_turn_finishes_after_it(settings):
    """The sub-agent parks twice; the server restarts at the first park."""
    prompt = "delegate builder:\n~~~\n$ echo one > a.txt\n$ echo two > b.txt\n~~~\ndone"
    session, parked = await parked_turn(settings, prompt)
    assert parked.approval_request.agent == "builder"

    # A new process on the same database: only the stored bytes remain.
    async with serving(replace(settings), "connect") as wire:
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
        assert got.state == s.SESSION_STATE_PARKED
        assert [e.approval_request.request_id for e in got.pending] == [
            parked.approval_request.request_id
        ]
        approve = decide(wire, session.id, t.DECISION_ONCE)
        await approve(parked)
        rest = await follow_until_finished(wire, session.id, parked.seq, approve)
    [second] = [e for e in rest if e.HasField("approval_request")]
    assert (second.author, second.approval_request.agent) == ("builder", "builder")
    assert second.approval_request.request_id != parked.approval_request.request_id
    assert not rest[-1].finished.HasField("error")
    assert rest[-1].finished.output == (
        "You said: done\nbuilder: $ echo one > a.txt -> exit 0\n$ echo two > b.txt -> exit 0"
    )
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "a.txt").read_text() == "one\n"
    assert (workspace / "b.txt").read_text() == "two\n"
    assert [e.tool_result.id for e in by(rest, "builder", "tool_result")] == [
        parked.approval_request.request_id,
        second.approval_request.request_id,
    ]
