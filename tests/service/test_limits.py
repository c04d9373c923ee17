"""Every field a client sends has a limit: past it the call is INVALID_ARGUMENT naming the
field and the limit, and nothing is stored."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration
from support.in_process import InProcess
from support.wire import Wire, expect_error, until

from blitz.assembly import open_core
from blitz.config import Settings
from blitz.core.api.service import RULES_MAX
from blitz.store import RuleRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t


async def refused(
    wire: Wire, method: str, request: Any, field: str, limit: str, **metadata: str
) -> None:
    error = await expect_error(wire.call(method, request), "invalid_argument", "INVALID_ARGUMENT")
    assert error.info is not None
    assert dict(error.info.metadata) == {"field": field, "limit": limit, **metadata}
    assert len(error.info.message) < 200, "the message never echoes the value"


@pytest.mark.parity
async def test_a_huge_label_value_is_refused_and_nothing_is_stored(wire):
    """A 7 MiB label value made every ListSessions too large for a stock gRPC client."""
    huge = s.CreateSessionRequest(labels={"k": "v" * (7 * 1024 * 1024)})
    await refused(wire, "CreateSession", huge, "labels", "256", key="k")
    listed = await wire.call("ListSessions", s.ListSessionsRequest())
    assert list(listed.sessions) == []


async def test_a_session_takes_at_most_64_labels(wire):
    many = s.CreateSessionRequest(labels={f"k{i}": "v" for i in range(5000)})
    await refused(wire, "CreateSession", many, "labels", "64")
    await wire.create_session(labels={f"k{i}": "v" for i in range(64)})
    await refused(wire, "ListSessions", s.ListSessionsRequest(labels=many.labels), "labels", "64")


def turn_request(**turn: Any) -> s.RunTurnRequest:
    return s.RunTurnRequest(session_id="s_none", turn=t.Turn(**{"text": "hi", **turn}))


@pytest.mark.parametrize(
    ("turn", "field", "limit"),
    [
        ({"text": "x" * (256 * 1024 + 1)}, "turn.text", "262144"),
        ({"prompt": "x" * (1024 * 1024 + 1)}, "turn.prompt", "1048576"),
        ({"read_only": "x" * 1001}, "turn.read_only", "1000"),
        ({"fetch_grants": ["h"] * 65}, "turn.fetch_grants", "64"),
        ({"fetch_grants": ["h" * 301]}, "turn.fetch_grants", "300"),
        ({"image_ids": ["i"] * 17}, "turn.image_ids", "16"),
        ({"context": [t.ContextBlock(text="x")] * 33}, "turn.context", "32"),
        ({"context": [t.ContextBlock(html="x" * (1024 * 1024 + 1))]}, "turn.context", "1048576"),
        ({"context": [t.ContextBlock(url="x" * 8193)]}, "turn.context.url", "8192"),
        (
            {"context": [t.ContextBlock(text="x" * 1024 * 1024)] * 5},
            "turn",
            str(4 * 1024 * 1024),
        ),
        ({"timeout": Duration(seconds=31 * 24 * 3600)}, "turn.timeout", "2592000s"),
        ({"timeout": Duration(seconds=10**17)}, "turn.timeout", "2592000s"),
    ],
)
async def test_each_field_of_a_turn_has_a_limit(wire, turn, field, limit):
    """Checked before the session is looked up: the same answer whoever asks."""
    error = await expect_error(
        _run(wire, turn_request(**turn)), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.info is not None
    assert (error.info.metadata["field"], error.info.metadata["limit"]) == (field, limit)


async def _run(wire: Wire, request: s.RunTurnRequest) -> list[t.TurnEvent]:
    return [event async for event in wire.stream("RunTurn", request)]


@pytest.mark.parametrize(
    ("method", "request_", "field", "limit"),
    [
        ("GetSession", s.GetSessionRequest(session_id="s" * 513), "session_id", "512"),
        ("Cancel", s.CancelRequest(session_id="s", turn_id="t" * 513), "turn_id", "512"),
        ("Steer", s.SteerRequest(session_id="s", text="x" * (64 * 1024 + 1)), "text", "65536"),
        (
            "Decide",
            s.DecideRequest(session_id="s", request_id="r", decision=1, reason="x" * 4097),
            "reason",
            "4096",
        ),
        (
            "Decide",
            s.DecideRequest(
                session_id="s", request_id="r", decision=2, command="x" * (64 * 1024 + 1)
            ),
            "command",
            "65536",
        ),
        (
            "Answer",
            s.AnswerRequest(session_id="s", request_id="r", answers=["a"] * 65),
            "answers",
            "64",
        ),
        (
            "Answer",
            s.AnswerRequest(session_id="s", request_id="r", answers=["a" * (16 * 1024 + 1)]),
            "answers",
            "16384",
        ),
        ("CreateSession", s.CreateSessionRequest(title="x" * 501), "title", "500"),
        ("CreateSession", s.CreateSessionRequest(model="m" * 257), "model", "256"),
        (
            "CreateSession",
            s.CreateSessionRequest(approval_timeout=Duration(seconds=10**15)),
            "approval_timeout",
            "2592000s",
        ),
        (
            "ListSessions",
            s.ListSessionsRequest(page_token="x" * 2000),
            "page_token",
            "",
        ),
    ],
)
async def test_each_field_of_a_call_has_a_limit(wire, method, request_, field, limit):
    error = await expect_error(wire.call(method, request_), "invalid_argument", "INVALID_ARGUMENT")
    assert error.info is not None
    assert error.info.metadata["field"] == field
    assert error.info.metadata.get("limit", "") == limit


@pytest.mark.parity
@pytest.mark.parametrize("raw", [b"nan|x", b"inf|x", b"-inf|x", b"1e400|x", b"12.5|", b"12.5"])
async def test_a_forged_page_token_is_refused(wire, raw):
    await wire.create_session()
    forged = base64.urlsafe_b64encode(raw).decode()
    await expect_error(
        wire.call("ListSessions", s.ListSessionsRequest(page_token=forged)),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )


async def test_a_session_holds_at_most_200_rules(settings: Settings):
    async with open_core(settings) as core:
        wire = Wire("core", InProcess(core.ports))
        session = await wire.create_session()
        for i in range(RULES_MAX):
            await core.store.add_rule(
                RuleRecord(
                    id=f"r_{uuid.uuid4().hex}",
                    scope=s.RULE_SCOPE_SESSION,
                    kind=t.ACTION_KIND_COMMAND,
                    scope_label=f"command: echo {i}",
                    session_id=session.id,
                    workspace=session.workspace,
                    caller="",
                    create_time=time.time(),
                    request_id=f"q{i}",
                )
            )
        stream = wire.run(session.id, "$ echo more")
        try:
            request = (await until(stream, "approval_request")).approval_request
            decide = s.DecideRequest(
                session_id=session.id, request_id=request.request_id, decision=t.DECISION_SESSION
            )
            await refused(wire, "Decide", decide, "decision", str(RULES_MAX))
            decide.decision = t.DECISION_ONCE
            await wire.call("Decide", decide)
        finally:
            await stream.aclose()
