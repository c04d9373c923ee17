"""Approvals people can trust: scoped rules, races between clients, timeouts, redaction."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
from support.servers import serving
from support.wire import Wire, decide, drive, expect_error, follow_until_finished, open_wire, until

from blitz.logs import configure_logging
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz_client import BlitzError

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


def resolutions(events: list[t.TurnEvent]) -> list[t.Resolution]:
    return [e.resolution for e in events if e.HasField("resolution")]


def approvals(events: list[t.TurnEvent]) -> list[t.ApprovalRequest]:
    return [e.approval_request for e in events if e.HasField("approval_request")]


async def test_two_clients_race_to_answer_and_both_see_the_one_resolution(server):
    grpc_wire, connect_wire = open_wire("grpc", server), open_wire("connect", server)
    try:
        session = await grpc_wire.create_session()
        stream = grpc_wire.run(session.id, "$ echo raced")
        parked = await until(stream, "approval_request")
        watchers = [
            asyncio.create_task(follow_until_finished(w, session.id, parked.seq))
            for w in (grpc_wire, connect_wire)
        ]
        request_id = parked.approval_request.request_id

        async def answer(wire: Wire, decision: int) -> str:
            try:
                await wire.decide(session.id, request_id, decision)
                return "won"
            except BlitzError as exc:
                assert exc.info is not None
                return exc.reason

        outcomes = await asyncio.gather(
            answer(grpc_wire, t.DECISION_ONCE), answer(connect_wire, t.DECISION_DENY)
        )
        seen = await asyncio.gather(*watchers)
        await stream.aclose()
    finally:
        await grpc_wire.close()
        await connect_wire.close()
    assert sorted(outcomes) == ["ALREADY_RESOLVED", "won"]
    winner = t.DECISION_ONCE if outcomes[0] == "won" else t.DECISION_DENY
    for events in seen:
        (resolution,) = resolutions(events)
        assert resolution.request_id == request_id
        assert resolution.decision == winner
        assert resolution.via == "decide"
        assert events[-1].HasField("finished")
    assert seen[0] == seen[1]


async def test_a_session_rule_approves_the_same_action_and_not_another(wire, settings):
    session = await wire.create_session()
    first = await drive(
        wire, session.id, "$ echo same", decide(wire, session.id, t.DECISION_SESSION)
    )
    assert approvals(first)[0].scope_label == "command: echo same"

    again = await wire.run_all(session.id, "$ echo same")
    assert approvals(again) == [], "a matching rule approves without parking"
    (by_rule,) = resolutions(again)
    assert by_rule.via == "rule" and by_rule.decision == t.DECISION_SESSION and by_rule.rule_id
    assert any("Approved by rule" in e.notice.text for e in again if e.HasField("notice"))
    assert "exit 0" in again[-1].finished.output

    other = await drive(wire, session.id, "$ echo other", decide(wire, session.id, t.DECISION_DENY))
    assert len(approvals(other)) == 1, "another command still asks"

    elsewhere = await wire.create_session()
    parked = await drive(
        wire, elsewhere.id, "$ echo same", decide(wire, elsewhere.id, t.DECISION_DENY)
    )
    assert len(approvals(parked)) == 1, "a SESSION rule stays in its session"


async def test_a_star_in_an_approved_command_is_no_wildcard(wire, settings):
    session = await wire.create_session()
    await drive(wire, session.id, "$ echo *", decide(wire, session.id, t.DECISION_ALWAYS))
    sneaky = await drive(
        wire, session.id, "$ echo x; touch PWNED; echo *", decide(wire, session.id, t.DECISION_DENY)
    )
    assert len(approvals(sneaky)) == 1, "it asks: the rule covers `echo *` only"
    assert not (settings.workspace_root / session.workspace / "PWNED").exists()


async def test_no_rule_is_made_from_an_action_holding_a_secret(wire):
    session = await wire.create_session()
    events = []
    async for event in wire.run(session.id, "$ echo password=hunter2 && echo ok"):
        events.append(event)
        if event.HasField("approval_request"):
            request = event.approval_request
            assert request.scope_label == "command: echo password=*** && echo ok"
            decision = s.DecideRequest(
                session_id=session.id, request_id=request.request_id, decision=t.DECISION_SESSION
            )
            with pytest.raises(BlitzError) as refused:
                await wire.call("Decide", decision)
            assert refused.value.metadata["field"] == "decision"
            assert "approve it ONCE" in refused.value.message
            await wire.decide(session.id, request, t.DECISION_ONCE)
    assert "exit 0" in events[-1].finished.output
    rules = await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))
    assert list(rules.rules) == []


async def test_a_rule_from_an_edited_command_covers_the_edit(wire, settings):
    session = await wire.create_session()
    await drive(
        wire,
        session.id,
        "$ touch DANGER",
        decide(wire, session.id, t.DECISION_SESSION, command="echo safe"),
    )
    rules = await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))
    assert [r.scope_label for r in rules.rules] == ["command: echo safe"]
    again = await drive(
        wire, session.id, "$ touch DANGER", decide(wire, session.id, t.DECISION_DENY)
    )
    assert len(approvals(again)) == 1, "the command the user replaced still asks"
    assert not (settings.workspace_root / session.workspace / "DANGER").exists()
    assert approvals(await wire.run_all(session.id, "$ echo safe")) == []


async def test_an_always_rule_outlives_the_session_and_the_server(settings):
    async with serving(settings) as wire:
        first = await wire.create_session(workspace="shared-ws")
        await drive(
            wire,
            first.id,
            "write notes.txt\n```\nv1\n```",
            decide(wire, first.id, t.DECISION_ALWAYS),
        )
    async with serving(settings, "connect") as wire:
        later = await wire.create_session(workspace="shared-ws")
        events = await wire.run_all(later.id, "write notes.txt\n```\nv2\n```")
        assert approvals(events) == []
        assert resolutions(events)[0].decision == t.DECISION_ALWAYS
        assert (settings.workspace_root / "shared-ws" / "notes.txt").read_text() == "v2\n"

        rules = await wire.call("ListRules", s.ListRulesRequest(session_id=later.id))
        (rule,) = rules.rules
        assert (rule.scope, rule.kind) == (s.RULE_SCOPE_ALWAYS, t.ACTION_KIND_WRITE)
        assert rule.workspace == "shared-ws"

        # ALWAYS is the caller's in that workspace: a session of another workspace asks.
        other = await wire.create_session()
        events = await drive(
            wire,
            other.id,
            "write notes.txt\n```\nx\n```",
            decide(wire, other.id, t.DECISION_ONCE),
        )
        assert len(approvals(events)) == 1, "an ALWAYS rule covers its workspace only"


@pytest.mark.parity
async def test_a_revoked_rule_asks_again(wire):
    session = await wire.create_session()
    await drive(wire, session.id, "$ true", decide(wire, session.id, t.DECISION_SESSION))
    (rule,) = (await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))).rules
    assert rule.scope == s.RULE_SCOPE_SESSION and rule.scope_label == "command: true"
    await wire.call("RevokeRule", s.RevokeRuleRequest(session_id=session.id, rule_id=rule.id))
    assert not (await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))).rules
    events = await drive(wire, session.id, "$ true", decide(wire, session.id, t.DECISION_ONCE))
    assert len(approvals(events)) == 1
    await expect_error(
        wire.call("RevokeRule", s.RevokeRuleRequest(session_id=session.id, rule_id=rule.id)),
        "not_found",
        "RULE_NOT_FOUND",
    )


async def test_a_timed_out_question_tells_the_agent_there_was_no_answer(wire):
    session = await wire.create_session(approval_timeout={"nanos": 300_000_000})
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.approval_timeout.ToMilliseconds() == 300
    events = await wire.run_all(session.id, "ask: anyone there? [yes|no]")
    (resolution,) = resolutions(events)
    assert resolution.via == "timeout" and list(resolution.answers) == []
    assert any("no answer" in e.notice.text for e in events if e.HasField("notice"))
    assert not events[-1].finished.HasField("error")


async def test_an_approval_timeout_is_a_deny_never_an_approval(wire, settings):
    session = await wire.create_session(approval_timeout={"nanos": 300_000_000})
    events = await wire.run_all(session.id, "$ touch should-not-exist")
    (resolution,) = resolutions(events)
    assert resolution.via == "timeout" and resolution.decision == t.DECISION_DENY
    assert not (settings.workspace_root / session.workspace / "should-not-exist").exists()


async def test_a_cancelled_turn_withdraws_its_requests_for_every_watcher(wire):
    session = await wire.create_session()

    async def cancel(event: t.TurnEvent) -> None:
        await wire.call("Cancel", s.CancelRequest(session_id=session.id))

    events = await drive(wire, session.id, "ask: still there?", cancel)
    (resolution,) = resolutions(events)
    assert resolution.via == "withdrawn"
    (question,) = [e.question for e in events if e.HasField("question")]
    assert resolution.request_id == question.request_id


async def test_a_late_client_finds_the_open_request_in_the_session_and_the_replay(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "ask: colour? [red|green]")
    asked = await until(stream, "question")
    await stream.aclose()
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert [e.question.request_id for e in got.pending] == [asked.question.request_id]
    replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    assert asked in replay and not resolutions(replay)
    await wire.call(
        "Answer",
        s.AnswerRequest(
            session_id=session.id, request_id=asked.question.request_id, answers=["red"]
        ),
    )
    rest = await follow_until_finished(wire, session.id, asked.seq)
    assert resolutions(rest)[0].answers == ["red"]


async def test_secrets_are_masked_for_clients_but_the_command_gets_them(wire, settings):
    session = await wire.create_session()
    command = (
        "echo API_TOKEN=sk-live1234567890abcdefXYZ"
        " https://bob:hunter22@example.com/x?api_key=k99secret > out.txt; cat out.txt"
    )
    events = await drive(
        wire, session.id, f"$ {command}", decide(wire, session.id, t.DECISION_ONCE)
    )
    # What tools received and returned is masked; the model's own text is the model's.
    shown = "\n".join(
        str(e) for e in events if not e.HasField("text") and not e.HasField("finished")
    )
    for secret in ("sk-live1234567890abcdefXYZ", "hunter22", "k99secret"):
        assert secret not in shown
    (approval,) = approvals(events)
    assert "API_TOKEN=***" in approval.detail
    assert "https://bob:***@example.com/x?api_key=***" in approval.detail
    assert approval.scope_label.startswith("command: echo API_TOKEN=***")
    written = (settings.workspace_root / session.workspace / "out.txt").read_text()
    assert "sk-live1234567890abcdefXYZ" in written and "hunter22" in written


def test_secrets_are_masked_in_log_lines():
    import structlog

    out = io.StringIO()
    configure_logging(log_format="json", level="info", stream=out)
    structlog.get_logger("test").info(
        "ran", command="curl -H 'Authorization: Bearer abcdefgh12345678' https://u:pw123456@h/"
    )
    line: dict[str, Any] = json.loads(out.getvalue().splitlines()[-1])
    assert "abcdefgh12345678" not in line["command"] and "pw123456" not in line["command"]
    assert "Bearer ***" in line["command"]
