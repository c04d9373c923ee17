"""pre_tool hooks: each answer, and what it does to the action (docs/hooks.md, "pre_tool").

Every test runs real turns of the demo model through a whole core, with real hook
programs in the command box, and checks what a client sees: the log's `hook` and
`resolution` events, whether a person was asked, and what ran.
"""

from __future__ import annotations

from support.wire import decide, drive

from blitz.v1 import turn_pb2 as t

from .conftest import Session, hook_events, kinds, only

ALLOW = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


async def test_an_allow_skips_the_approval_and_the_action_runs(session: Session):
    hook = await session.hook("pre_tool", session.answering("allow.py", ALLOW))
    events = await session.run("$ echo ran at the hooks word")
    assert "approval_request" not in kinds(events), "no person was asked"
    outcome = only(events, "hook").hook
    assert (outcome.hook_id, outcome.event, outcome.decision) == (
        hook.id,
        "pre_tool",
        t.HOOK_DECISION_ALLOW,
    )
    resolution = only(events, "resolution").resolution
    assert (resolution.via, resolution.resolved_by, resolution.decision) == (
        "hook",
        hook.id,
        t.DECISION_ONCE,
    )
    result = only(events, "tool_result").tool_result
    assert not result.is_error and "ran at the hooks word" in result.result["output"]


async def test_a_deny_reaches_the_model_and_the_log(session: Session):
    command = session.script(
        "deny.sh", 'cat >/dev/null\necho "no pushing on Fridays" >&2\nexit 2\n'
    )
    hook = await session.hook("pre_tool", command)
    events = await session.run("$ git push origin main")
    assert "approval_request" not in kinds(events)
    outcome = only(events, "hook").hook
    assert (outcome.decision, outcome.reason) == (t.HOOK_DECISION_DENY, "no pushing on Fridays")
    resolution = only(events, "resolution").resolution
    assert (resolution.via, resolution.decision, resolution.reason) == (
        "hook",
        t.DECISION_DENY,
        "no pushing on Fridays",
    )
    assert resolution.resolved_by == hook.id
    result = only(events, "tool_result").tool_result
    assert result.is_error and result.result["error"] == "no pushing on Fridays"
    # The model was told: the demo model repeats what its tool call returned.
    assert "no pushing on Fridays" in events[-1].finished.output


async def test_ask_leaves_it_to_a_person_even_where_the_mode_would_approve(session: Session):
    ask = {
        "hookSpecificOutput": {
            "permissionDecision": "ask",
            "permissionDecisionReason": "notes are read by the auditors",
        }
    }
    await session.hook("pre_tool", session.answering("ask.py", ask), tools=["write_file"])
    asked: list[t.TurnEvent] = []

    async def on_request(event: t.TurnEvent) -> None:
        asked.append(event)
        await session.wire.decide(session.id, event, "once")

    events = await drive(
        session.wire,
        session.id,
        "write notes.md\n```\nhello\n```",
        on_request,
        mode=t.SESSION_MODE_ACCEPT_EDITS,
    )
    assert len(asked) == 1, "accept-edits would have written it: the hook asked a person"
    assert only(events, "hook").hook.decision == t.HOOK_DECISION_ASK
    assert (session.workspace / "notes.md").read_text() == "hello\n"
    assert only(events, "resolution").resolution.via == "decide"


async def test_ask_leaves_it_to_a_person_even_where_a_rule_would_approve(session: Session):
    rule = t.RuleMatch(match=t.RULE_MATCH_COMMAND_PREFIX, pattern="echo")
    await drive(
        session.wire,
        session.id,
        "$ echo one",
        decide(session.wire, session.id, "session", rule=rule),
    )
    ask = {"hookSpecificOutput": {"permissionDecision": "ask"}}
    hook = await session.hook("pre_tool", session.answering("ask.py", ask))
    events = await drive(
        session.wire, session.id, "$ echo two", decide(session.wire, session.id, "once")
    )
    request = only(events, "approval_request").approval_request
    assert request.asked_by_hook == hook.id, "the rule covers it, and a person is asked"
    assert only(events, "resolution").resolution.via == "decide"


async def test_a_rewritten_command_is_what_runs(session: Session):
    rewrite = {
        "hookSpecificOutput": {
            "permissionDecision": "allow",
            "updatedInput": {"command": "echo rewritten by the hook", "network": False},
        }
    }
    await session.hook("pre_tool", session.answering("rewrite.py", rewrite))
    events = await session.run("$ echo as the agent wrote it")
    outcome = only(events, "hook").hook
    assert outcome.updated_input["command"] == "echo rewritten by the hook"
    result = only(events, "tool_result").tool_result
    assert result.result["command"] == "echo rewritten by the hook"
    assert result.result["output"] == "rewritten by the hook\n"


async def test_a_rewrite_left_to_a_person_shows_as_edited_and_runs_once_approved(
    session: Session,
):
    rewrite = {
        "hookSpecificOutput": {
            "permissionDecision": "ask",
            "updatedInput": {"command": "echo safer"},
        }
    }
    hook = await session.hook("pre_tool", session.answering("rewrite.py", rewrite))
    events = await drive(
        session.wire, session.id, "$ echo riskier", decide(session.wire, session.id, "once")
    )
    request = only(events, "approval_request").approval_request
    assert (request.detail, request.scope_label) == ("echo safer", "command: echo safer")
    assert request.hook_edit.hook_id == hook.id
    assert request.hook_edit.original_input["command"] == "echo riskier"
    assert request.hook_edit.input["command"] == "echo safer"
    assert only(events, "resolution").resolution.command == "echo safer"
    assert only(events, "tool_result").tool_result.result["output"] == "safer\n"


async def test_a_hook_cannot_rewrite_what_the_tool_does_not_let_it(session: Session):
    rewrite = {
        "hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"network": True}}
    }
    await session.hook("pre_tool", session.answering("net.py", rewrite))
    events = await session.run("$ echo offline")
    outcome = only(events, "hook").hook
    assert not outcome.HasField("updated_input") and "ignored" in outcome.reason
    assert only(events, "tool_result").tool_result.result["output"] == "offline\n"


async def test_context_a_pre_tool_hook_adds_reaches_the_model(session: Session):
    context = {
        "hookSpecificOutput": {
            "permissionDecision": "allow",
            "additionalContext": "the llamas are in the barn",
        }
    }
    await session.hook("pre_tool", session.answering("context.py", context))
    events = await session.run("$ echo hi")
    assert "the llamas are in the barn" in events[-1].finished.output


async def test_hooks_run_in_order_each_shown_what_the_one_before_left(session: Session):
    first = {"hookSpecificOutput": {"updatedInput": {"command": "echo second"}}}
    await session.hook("pre_tool", session.answering("first.py", first))
    await session.hook("pre_tool", session.answering("second.py", ALLOW, record=True))
    events = await session.run("$ echo first")
    assert [h.decision for h in hook_events(events)] == [
        t.HOOK_DECISION_NONE,
        t.HOOK_DECISION_ALLOW,
    ]
    assert session.read("second.py")[0]["tool_input"]["command"] == "echo second"
    assert only(events, "tool_result").tool_result.result["output"] == "second\n"


async def test_a_deny_rule_still_refuses_what_a_hook_allows(session: Session):
    rule = t.RuleMatch(match=t.RULE_MATCH_COMMAND_PREFIX, pattern="rm", effect=t.RULE_EFFECT_DENY)
    await drive(
        session.wire,
        session.id,
        "$ rm -f nothing",
        decide(session.wire, session.id, "session", rule=rule),
    )
    # Now a deny rule covers `rm`: a hook's allow yields to it.
    await session.hook("pre_tool", session.answering("allow.py", ALLOW))
    (session.workspace / "keep.txt").write_text("kept")
    events = await session.run("$ rm keep.txt")
    resolution = only(events, "resolution").resolution
    assert (resolution.via, resolution.decision) == ("rule", t.DECISION_DENY)
    assert (session.workspace / "keep.txt").exists()
