"""The two kinds of hook (a command, an HTTP endpoint), a Claude Code hook script run
unchanged, and what a hook that fails does: deny, unless it is `fail_open`
(docs/hooks.md, "Command hooks", "HTTP hooks", "Failures")."""

from __future__ import annotations

import json

from google.protobuf.duration_pb2 import Duration
from support.receiver import Receiver
from support.wire import decide, drive

from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t

from .conftest import Session, kinds, only

DENY = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "the receiver says no",
    }
}

# Two hooks as a team using Claude Code writes them (its documented input and output, its
# tool names, $CLAUDE_PROJECT_DIR), run here as they are. The first answers by its exit
# code, the second in JSON.
NO_FORCE_PUSH = """\
#!/usr/bin/env python3
# PreToolUse hook: force pushes rewrite shared history.
import json
import re
import sys

try:
    data = json.load(sys.stdin)
except json.JSONDecodeError as error:
    print(f"bad hook input: {error}", file=sys.stderr)
    sys.exit(1)
if data.get("tool_name") != "Bash":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
if re.search(r"\\bgit\\s+push\\b.*(--force\\b|\\s-f\\b)", command):
    print("Force pushes are not allowed here; push a new branch instead.", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"""
PROTECT_ENV = """\
#!/usr/bin/env python3
# PreToolUse hook: .env files hold secrets; the agent does not write them.
import json
import os
import sys

data = json.load(sys.stdin)
if data["hook_event_name"] != "PreToolUse" or data["tool_name"] not in ("Write", "Edit"):
    sys.exit(0)
path = data["tool_input"].get("file_path", "")
if os.path.basename(path).startswith(".env"):
    shown = os.path.relpath(path, os.environ["CLAUDE_PROJECT_DIR"])
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"{shown} is for people to edit, not the agent",
        }
    }))
sys.exit(0)
"""


async def test_an_http_hook_is_posted_signed_and_its_answer_decides(
    session: Session, receiver: Receiver
):
    receiver.answer = lambda _: (
        200,
        {"Content-Type": "application/json"},
        json.dumps(DENY).encode(),
    )
    made = await session.wire.call(
        "CreateHook", hk.CreateHookRequest(event=hk.HOOK_EVENT_PRE_TOOL, url=receiver.url)
    )
    assert made.secret.startswith("whsec_") and made.hook.url == receiver.url
    events = await session.run("$ echo over http")
    assert only(events, "resolution").resolution.reason == "the receiver says no"
    [payload] = receiver.verified(made.secret)
    assert (payload["hook_event_name"], payload["tool_name"], payload["session_id"]) == (
        "PreToolUse",
        "Bash",
        session.id,
    )
    assert payload["tool_input"]["command"] == "echo over http"


async def test_an_http_hook_that_fails_denies(session: Session, receiver: Receiver):
    receiver.answer = lambda _: (500, {}, b"oops")
    made = await session.wire.call(
        "CreateHook", hk.CreateHookRequest(event=hk.HOOK_EVENT_PRE_TOOL, url=receiver.url)
    )
    events = await session.run("$ echo over http")
    outcome = only(events, "hook").hook
    assert outcome.failed and outcome.error == "it answered HTTP 500"
    assert outcome.decision == t.HOOK_DECISION_DENY
    assert only(events, "tool_result").tool_result.result["error"] == (
        f"the hook {made.hook.id} failed: it answered HTTP 500"
    )


async def test_claude_code_hook_scripts_run_unchanged(session: Session):
    await session.hook(
        "pre_tool", session.script("no_force_push.py", NO_FORCE_PUSH), tools=["Bash"]
    )
    await session.hook(
        "pre_tool", session.script("protect_env.py", PROTECT_ENV), tools=["Write|Edit"]
    )
    pushed = await session.run("$ git push --force origin main")
    assert only(pushed, "tool_result").tool_result.result["error"] == (
        "Force pushes are not allowed here; push a new branch instead."
    )
    written = await session.run("write .env\n```\nTOKEN=x\n```")
    assert only(written, "tool_result").tool_result.result["error"] == (
        ".env is for people to edit, not the agent"
    )
    assert not (session.workspace / ".env").exists()
    # What neither blocks goes on as it would have: a person is asked.
    events = await drive(
        session.wire, session.id, "$ git push origin main", decide(session.wire, session.id, "deny")
    )
    assert "approval_request" in kinds(events)


async def test_an_answer_that_is_not_json_denies(session: Session):
    hook = await session.hook("pre_tool", session.script("garbage.sh", "echo sure, go ahead\n"))
    events = await session.run("$ echo hi")
    outcome = only(events, "hook").hook
    assert (outcome.failed, outcome.error, outcome.decision) == (
        True,
        "it answered something that is not JSON",
        t.HOOK_DECISION_DENY,
    )
    assert only(events, "resolution").resolution.reason == (
        f"the hook {hook.id} failed: it answered something that is not JSON"
    )
    assert "approval_request" not in kinds(events)


async def test_a_hook_past_its_timeout_denies(session: Session):
    command = session.script("slow.sh", "sleep 30\n")
    await session.hook("pre_tool", command, timeout=Duration(seconds=1))
    events = await session.run("$ echo hi")
    outcome = only(events, "hook").hook
    assert outcome.failed and outcome.error == "it did not finish within 1 s"
    assert outcome.decision == t.HOOK_DECISION_DENY
    assert outcome.duration.ToTimedelta().total_seconds() < 10, "killed at its timeout"


async def test_a_hook_that_exits_otherwise_denies(session: Session):
    command = session.script("broken.sh", "echo 'cannot read config' >&2\nexit 1\n")
    await session.hook("pre_tool", command)
    events = await session.run("$ echo hi")
    outcome = only(events, "hook").hook
    assert outcome.error == "it exited 1: cannot read config"
    assert outcome.decision == t.HOOK_DECISION_DENY


async def test_a_fail_open_hook_that_fails_leaves_the_action_as_it_was(session: Session):
    await session.hook("pre_tool", session.script("garbage.sh", "echo sure\n"), fail_open=True)
    events = await drive(
        session.wire, session.id, "$ echo hi", decide(session.wire, session.id, "once")
    )
    outcome = only(events, "hook").hook
    assert outcome.failed and outcome.decision == t.HOOK_DECISION_NONE
    assert "approval_request" in kinds(events), "a person decides, as without the hook"
    assert only(events, "tool_result").tool_result.result["output"] == "hi\n"


async def test_a_failed_turn_start_hook_refuses_the_turn_unless_fail_open(session: Session):
    await session.hook("turn_start", session.script("broken.sh", "exit 3\n"))
    refused = await session.run("hello")
    assert refused[-1].finished.error.reason == "HOOK_DENIED"
    hooks = await session.wire.call("ListHooks", hk.ListHooksRequest())
    request = hk.UpdateHookRequest(hook_id=hooks.hooks[0].id, fail_open=True)
    request.update_mask.paths.append("fail_open")
    await session.wire.call("UpdateHook", request)
    events = await session.run("hello")
    assert not events[-1].finished.HasField("error")
