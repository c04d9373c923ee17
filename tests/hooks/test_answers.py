"""What a hook's answer means, field by field (docs/hooks.md, "What a hook answers"), and
what is garbage: read as Claude Code's hooks' answers are read."""

from __future__ import annotations

import pytest

from blitz.core.hooks.answers import Failed, blocked, read_answer
from blitz.v1 import turn_pb2 as t

NONE, ALLOW, DENY = t.HOOK_DECISION_NONE, t.HOOK_DECISION_ALLOW, t.HOOK_DECISION_DENY
ASK, CONTINUE = t.HOOK_DECISION_ASK, t.HOOK_DECISION_CONTINUE


@pytest.mark.parametrize(
    ("event", "text", "decision", "reason"),
    [
        ("pre_tool", "", NONE, ""),
        ("pre_tool", "{}", NONE, ""),
        ("pre_tool", '{"hookSpecificOutput": {"permissionDecision": "allow"}}', ALLOW, ""),
        ("pre_tool", '{"hookSpecificOutput": {"permissionDecision": "ask"}}', ASK, ""),
        ("pre_tool", '{"hookSpecificOutput": {"permissionDecision": "defer"}}', NONE, ""),
        ("pre_tool", '{"decision": "approve"}', ALLOW, ""),
        ("pre_tool", '{"decision": "block", "reason": "no"}', DENY, "no"),
        (
            "pre_tool",
            '{"decision": "approve", "hookSpecificOutput": {"permissionDecision": "deny",'
            ' "permissionDecisionReason": "later wins"}}',
            DENY,
            "later wins",
        ),
        (
            "pre_tool",
            '{"continue": false, "stopReason": "stop", "hookSpecificOutput":'
            ' {"permissionDecision": "allow"}}',
            DENY,
            "stop",
        ),
        ("turn_end", '{"decision": "block", "reason": "go on"}', CONTINUE, "go on"),
        ("turn_end", '{"continue": false}', NONE, "stopped by the hook"),
        ("post_tool", '{"decision": "block", "reason": "bad"}', DENY, "bad"),
        ("turn_start", "plain text is context", NONE, ""),
        ("pre_tool", '{"suppressOutput": true, "systemMessage": "hi"}', NONE, ""),
    ],
)
def test_claude_codes_answers_mean_the_same_here(event, text, decision, reason):
    answer = read_answer(event, text)
    assert (answer.decision, answer.reason) == (decision, reason)


@pytest.mark.parametrize(
    ("event", "text"),
    [
        ("pre_tool", "ok"),
        ("pre_tool", "[1, 2]"),
        ("pre_tool", '{"decision": "maybe"}'),
        ("pre_tool", '{"decision": 1}'),
        ("pre_tool", '{"continue": "no"}'),
        ("pre_tool", '{"hookSpecificOutput": []}'),
        ("pre_tool", '{"hookSpecificOutput": {"permissionDecision": "yes"}}'),
        ("pre_tool", '{"hookSpecificOutput": {"updatedInput": "rm -rf /"}}'),
        ("turn_end", '{"hookSpecificOutput": {"permissionDecision": "allow"}}'),
        ("turn_end", '{"hookSpecificOutput": {"additionalContext": "x"}}'),
        ("post_tool", '{"hookSpecificOutput": {"updatedInput": {}}}'),
        ("turn_start", "{not json"),
    ],
)
def test_what_is_garbage(event, text):
    with pytest.raises(Failed):
        read_answer(event, text)


def test_a_block_means_what_its_event_can_do():
    assert [blocked(e, "r").decision for e in ("turn_start", "pre_tool", "post_tool")] == [DENY] * 3
    assert blocked("turn_end", "r").decision == CONTINUE
    assert blocked("notification", "r").decision == NONE


def test_context_and_a_rewrite_are_read():
    answer = read_answer(
        "pre_tool",
        '{"hookSpecificOutput": {"updatedInput": {"command": "ls"},'
        ' "additionalContext": "see README"}, "systemMessage": "rewritten"}',
    )
    assert (answer.updated_input, answer.context, answer.system_message) == (
        {"command": "ls"},
        "see README",
        "rewritten",
    )
