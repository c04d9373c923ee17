"""Rules that scale and modes, over every wire: what a client is offered, what it may make,
and what each mode lets through without asking."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from support.servers import serving
from support.wire import decide, drive, expect_error, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

WRITE = "write notes.txt\n```\nhello\n```"


def approvals(events: list[t.TurnEvent]) -> list[t.ApprovalRequest]:
    return [e.approval_request for e in events if e.HasField("approval_request")]


def outputs(events: list[t.TurnEvent]) -> str:
    return "".join(e.tool_output.output for e in events if e.HasField("tool_output"))


@pytest.mark.parity
async def test_a_request_offers_its_decisions_and_a_prefix_rule_that_then_covers_more(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "$ echo hello one")
    asked = (await until(stream, "approval_request")).approval_request
    assert list(asked.available_decisions) == [
        t.DECISION_ONCE, t.DECISION_SESSION, t.DECISION_ALWAYS, t.DECISION_DENY
    ]  # fmt: skip
    suggested = asked.suggested_rule
    assert (suggested.match, suggested.pattern) == (t.RULE_MATCH_COMMAND_PREFIX, "echo hello")
    assert "echo hello" in suggested.label
    await wire.decide(session.id, asked, t.DECISION_SESSION, rule=suggested)
    [e async for e in stream]
    later = await wire.run_all(session.id, "$ echo hello two\n$ echo hello three && echo hello 4")
    assert approvals(later) == [], "the prefix covers them, each part of a chain too"
    assert "hello two" in outputs(later)
    chained = wire.run(session.id, "$ echo hello five; rm -rf notes")
    assert (await until(chained, "approval_request")).approval_request.scope_label.endswith("notes")
    await chained.aclose()
    (rule,) = (await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))).rules
    assert (rule.match, rule.pattern, rule.effect) == (
        t.RULE_MATCH_COMMAND_PREFIX,
        "echo hello",
        t.RULE_EFFECT_ALLOW,
    )


@pytest.mark.parity
async def test_a_deny_rule_refuses_the_action_and_every_later_one_it_covers(wire, settings):
    session = await wire.create_session()
    deny = t.RuleMatch(
        match=t.RULE_MATCH_COMMAND_PREFIX, pattern="touch", effect=t.RULE_EFFECT_DENY
    )
    events = await drive(
        wire, session.id, "$ touch first", decide(wire, session.id, t.DECISION_SESSION, rule=deny)
    )
    folder = settings.workspace_root / session.workspace
    assert not (folder / "first").exists()
    later = await wire.run_all(session.id, "$ touch second")
    assert approvals(later) == [] and not (folder / "second").exists()
    resolution = next(e.resolution for e in later if e.HasField("resolution"))
    assert (resolution.decision, resolution.via) == (t.DECISION_DENY, "rule")
    assert events[-1].HasField("finished")


@pytest.mark.parity
async def test_a_rule_that_does_not_cover_its_request_is_refused(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "$ echo hi")
    asked = (await until(stream, "approval_request")).approval_request
    for rule, field in (
        (t.RuleMatch(match=t.RULE_MATCH_COMMAND_PREFIX, pattern="ls"), "rule"),
        (t.RuleMatch(match=t.RULE_MATCH_PATH_GLOB, pattern="*.py"), "rule.match"),
        (t.RuleMatch(match=t.RULE_MATCH_COMMAND_PREFIX, pattern=""), "rule.pattern"),
    ):
        error = await expect_error(
            wire.call(
                "Decide",
                s.DecideRequest(
                    session_id=session.id,
                    request_id=asked.request_id,
                    decision=t.DECISION_SESSION,
                    rule=rule,
                ),
            ),
            "invalid_argument",
            "INVALID_ARGUMENT",
        )
        assert error.metadata["field"] == field
    await stream.aclose()


async def test_a_rule_ends_when_it_lasts_no_longer(wire):
    session = await wire.create_session()
    brief = t.RuleMatch(match=t.RULE_MATCH_EXACT, lasts=Duration(seconds=1))
    await drive(
        wire, session.id, "$ echo brief", decide(wire, session.id, t.DECISION_SESSION, rule=brief)
    )
    assert approvals(await wire.run_all(session.id, "$ echo brief")) == []
    (rule,) = (await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))).rules
    assert rule.HasField("expire_time")
    await asyncio.sleep(1.2)
    stream = wire.run(session.id, "$ echo brief")
    await until(stream, "approval_request")
    await stream.aclose()


@pytest.mark.parity
async def test_accept_edits_writes_without_asking_and_still_asks_for_commands(wire, settings):
    session = await wire.create_session(mode=t.SESSION_MODE_ACCEPT_EDITS)
    assert session.mode == t.SESSION_MODE_ACCEPT_EDITS
    events = await wire.run_all(session.id, WRITE)
    assert approvals(events) == []
    assert (settings.workspace_root / session.workspace / "notes.txt").read_text() == "hello\n"
    assert any("accept_edits" in e.notice.text for e in events if e.HasField("notice"))
    stream = wire.run(session.id, "$ echo asked")
    assert (await until(stream, "approval_request")).approval_request.kind == t.ACTION_KIND_COMMAND
    await stream.aclose()


@pytest.mark.parity
async def test_read_only_refuses_and_a_turn_may_ask_for_another_mode(wire, settings):
    session = await wire.create_session()
    await wire.call(
        "UpdateSession",
        s.UpdateSessionRequest(
            session_id=session.id,
            mode=t.SESSION_MODE_READ_ONLY,
            update_mask=FieldMask(paths=["mode"]),
        ),
    )
    events = await wire.run_all(session.id, WRITE)
    assert approvals(events) == []
    assert "read-only mode" in str(events)
    assert not (settings.workspace_root / session.workspace / "notes.txt").exists()
    edits = await wire.run_all(session.id, WRITE, mode=t.SESSION_MODE_ACCEPT_EDITS)
    assert approvals(edits) == []
    assert (settings.workspace_root / session.workspace / "notes.txt").exists()


@pytest.mark.parity
async def test_a_destructive_command_is_marked_and_offered_no_broader_rule(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "$ rm -rf build")
    asked = (await until(stream, "approval_request")).approval_request
    assert asked.destructive and not asked.HasField("suggested_rule")
    assert t.DECISION_ALWAYS in asked.available_decisions, "exactly, a person still may"
    await wire.decide(session.id, asked, t.DECISION_ALWAYS)
    resolved = (await until(stream, "resolution")).resolution
    (rule,) = (await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))).rules
    assert resolved.rule_id == rule.id
    assert (resolved.saved_rule.match, resolved.saved_rule.label) == (
        t.RULE_MATCH_EXACT,
        "command: rm -rf build",
    )
    [e async for e in stream]

    stream = wire.run(session.id, "$ echo plain")
    asked = (await until(stream, "approval_request")).approval_request
    assert not asked.destructive and asked.suggested_rule.pattern == "echo plain"
    await wire.decide(session.id, asked, t.DECISION_SESSION, rule=asked.suggested_rule)
    resolved = (await until(stream, "resolution")).resolution
    assert resolved.saved_rule.label == "command: echo plain …"
    [e async for e in stream]


@pytest.mark.parity
async def test_a_plan_accepted_in_plan_mode_is_carried_out_and_the_mode_stays(wire):
    session = await wire.create_session(mode=t.SESSION_MODE_PLAN)
    await wire.run_all(session.id, "todo: make it\n$ echo carried")
    found = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    accept = s.AcceptPlanRequest(session_id=session.id, plan_id=found.plan_id)
    stream = wire.stream("AcceptPlan", accept)
    asked = await until(stream, "approval_request")
    assert "echo carried" in asked.approval_request.detail
    await wire.decide(session.id, asked, t.DECISION_ONCE)
    events = [e async for e in stream]
    assert not any(e.HasField("plan_proposed") for e in events)
    found = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert found.mode == t.SESSION_MODE_PLAN


@pytest.mark.parity
async def test_plan_mode_proposes_a_plan(wire):
    session = await wire.create_session(mode=t.SESSION_MODE_PLAN)
    events = await wire.run_all(session.id, "todo: look; change\n$ echo no")
    assert approvals(events) == []
    assert any(e.HasField("plan_proposed") for e in events)


@pytest.mark.parity
async def test_bypass_is_refused_unless_the_operator_allows_it(wire):
    error = await expect_error(
        wire.create_session(mode=t.SESSION_MODE_BYPASS), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "mode"


async def test_bypass_lets_everything_through_where_allowed(settings):
    async with serving(replace(settings, allow_bypass_mode=True)) as wire:
        session = await wire.create_session(mode=t.SESSION_MODE_BYPASS)
        events = await wire.run_all(session.id, f"$ echo bypassed\n{WRITE}")
    assert approvals(events) == [] and "bypassed" in outputs(events)
