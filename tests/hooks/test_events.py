"""turn_start, post_tool, turn_end and notification hooks (docs/hooks.md, "Events"): what
each can do to a turn, with real hook programs and the demo model."""

from __future__ import annotations

from google.protobuf.field_mask_pb2 import FieldMask
from support.wire import decide, drive, until

from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t

from .conftest import Session, hook_events, kinds, only


async def test_context_a_turn_start_hook_adds_reaches_the_model(session: Session):
    # Plain text on stdout is context, as Claude Code's UserPromptSubmit hooks give it.
    command = session.script("context.sh", "cat >/dev/null\necho 'the deadline is Friday'\n")
    await session.hook("turn_start", command)
    events = await session.run("when is it due?")
    assert only(events, "hook").hook.additional_context == "the deadline is Friday"
    assert "the deadline is Friday" in events[-1].finished.output


async def test_a_turn_start_hook_refuses_the_prompt(session: Session):
    refuse = {"decision": "block", "reason": "prompts about passwords go to the security desk"}
    hook = await session.hook("turn_start", session.answering("refuse.py", refuse))
    events = await session.run("what is the root password?")
    assert "tool_call" not in kinds(events) and "text" not in kinds(events)
    error = events[-1].finished.error
    assert (error.reason, error.metadata["hook_id"]) == ("HOOK_DENIED", hook.id)
    assert error.message == "prompts about passwords go to the security desk"
    assert only(events, "hook").hook.decision == t.HOOK_DECISION_DENY


async def test_a_turn_start_hook_reads_the_prompt(session: Session):
    await session.hook("turn_start", session.answering("read.py", {}, record=True))
    await session.run("the prompt itself")
    seen = session.read("read.py")[0]
    assert (seen["hook_event_name"], seen["prompt"], seen["session_id"]) == (
        "UserPromptSubmit",
        "the prompt itself",
        session.id,
    )
    assert seen["cwd"] == str(session.workspace) and seen["permission_mode"] == "default"


async def test_post_tool_hooks_add_context_and_flag_the_result(session: Session):
    context = {"hookSpecificOutput": {"additionalContext": "the build cache was cold"}}
    flag = {"decision": "block", "reason": "the output names a deprecated API"}
    await session.hook("post_tool", session.answering("context.py", context, record=True))
    await session.hook("post_tool", session.answering("flag.py", flag))
    events = await drive(
        session.wire, session.id, "$ echo built", decide(session.wire, session.id, "once")
    )
    outcomes = hook_events(events)
    assert [o.decision for o in outcomes] == [t.HOOK_DECISION_NONE, t.HOOK_DECISION_DENY]
    assert {o.tool for o in outcomes} == {"run_command"}
    output = events[-1].finished.output
    assert "the build cache was cold" in output
    assert "flagged the result of run_command" in output and "deprecated API" in output
    seen = session.read("context.py")[0]
    assert (seen["hook_event_name"], seen["tool_name"], seen["blitz_tool_name"]) == (
        "PostToolUse",
        "Bash",
        "run_command",
    )
    assert seen["tool_input"]["command"] == "echo built"
    assert seen["tool_response"]["output"] == "built\n"


async def test_a_turn_end_hook_makes_the_agent_go_on_once(session: Session):
    go_on = {"decision": "block", "reason": "also check the docs"}
    hook = await session.hook("turn_end", session.answering("go_on.py", go_on, record=True))
    events = await session.run("fix the bug")
    outcomes = hook_events(events)
    assert [(o.hook_id, o.decision) for o in outcomes] == [
        (hook.id, t.HOOK_DECISION_CONTINUE),
        (hook.id, t.HOOK_DECISION_NONE),
    ], "it asked twice; the turn went on once"
    assert "not acted on" in outcomes[1].reason
    assert [seen["stop_hook_active"] for seen in session.read("go_on.py")] == [False, True]
    assert session.read("go_on.py")[0]["last_assistant_message"] == "You said: fix the bug"
    assert events[-1].finished.output == "You said: also check the docs"


async def test_a_notification_hook_is_told_when_the_turn_parks(session: Session):
    hook = await session.hook("notification", session.answering("told.py", {}, record=True))
    stream = session.wire.run(session.id, "$ echo waiting")
    asked = await until(stream, "approval_request")
    told = await until(stream, "hook")
    assert (told.hook.hook_id, told.hook.event) == (hook.id, "notification")
    seen = session.read("told.py")[0]
    assert seen["hook_event_name"] == "Notification"
    assert "echo waiting" in seen["message"] and seen["request_ids"] == [
        asked.approval_request.request_id
    ]
    await session.wire.decide(session.id, asked, "once")
    rest = [event async for event in stream]
    assert rest[-1].HasField("finished")


async def test_a_disabled_hook_does_not_run(session: Session):
    refuse = {"decision": "block", "reason": "no"}
    hook = await session.hook("turn_start", session.answering("refuse.py", refuse))
    request = hk.UpdateHookRequest(
        hook_id=hook.id, disabled=True, update_mask=FieldMask(paths=["disabled"])
    )
    assert (await session.wire.call("UpdateHook", request)).disabled
    events = await session.run("hello")
    assert "hook" not in kinds(events) and not events[-1].finished.HasField("error")


async def test_what_a_hook_says_is_masked_in_the_log_as_every_event_is(session: Session):
    command = session.script(
        "leaky.sh", "cat >/dev/null\necho 'the password: hunter2' >&2\nexit 2\n"
    )
    await session.hook("turn_start", command)
    events = await session.run("hello")
    reason = only(events, "hook").hook.reason
    assert "hunter2" not in reason and reason == "the password: ***"
    assert "hunter2" not in events[-1].finished.error.message
