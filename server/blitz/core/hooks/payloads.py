"""The JSON a hook is sent for each event (docs/hooks.md, "What a hook reads").

Its field names are Claude Code's where they mean the same (`session_id`, `cwd`,
`hook_event_name`, `permission_mode`, `tool_name`, `tool_input`, `tool_use_id`,
`tool_response`, `prompt`, `stop_hook_active`, `message`), with Claude Code's values
where Blitz has the same thing (`hook_event_name` is `PreToolUse` for pre_tool, `tool_name`
is `Bash` for run_command), so a team's hook scripts read it unchanged; what Blitz adds
is named `blitz_…` or is Blitz's own (`turn_id`, `principal`, `action`). Everything here
is built from what the core already holds. A tool's input is what the agent asked, not
masked: a hook judges, and may rewrite, what would run (docs/security.md, "Hooks"); the
`hook` event that records its answer is masked as every event is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from blitz.core.hooks.matching import claude_name
from blitz.v1 import turn_pb2 as t

__all__ = [
    "CLAUDE_EVENTS",
    "Common",
    "common",
    "notification",
    "post_tool",
    "pre_tool",
    "sample",
    "turn_end",
    "turn_start",
]

# Claude Code's names of the events (`hook_event_name`).
CLAUDE_EVENTS = {
    "turn_start": "UserPromptSubmit",
    "pre_tool": "PreToolUse",
    "post_tool": "PostToolUse",
    "turn_end": "Stop",
    "notification": "Notification",
}
# Claude Code's names of the modes (`permission_mode`); read_only has none of its own.
_MODES: dict[int, str] = {
    t.SESSION_MODE_ASK: "default",
    t.SESSION_MODE_ACCEPT_EDITS: "acceptEdits",
    t.SESSION_MODE_PLAN: "plan",
    t.SESSION_MODE_BYPASS: "bypassPermissions",
    t.SESSION_MODE_READ_ONLY: "readOnly",
}
_KINDS: dict[int, str] = {
    t.ACTION_KIND_COMMAND: "command",
    t.ACTION_KIND_WRITE: "write",
    t.ACTION_KIND_DELETE: "delete",
    t.ACTION_KIND_NETWORK: "network",
    t.ACTION_KIND_MCP: "mcp",
    t.ACTION_KIND_PUSH: "push",
}

Common = dict[str, Any]


def common(
    event: str,
    *,
    session_id: str,
    turn_id: str,
    workspace: Path | str,
    mode: int,
    principal: str,
) -> Common:
    """The fields of every event's JSON."""
    return {
        "session_id": session_id,
        "turn_id": turn_id,
        # Blitz keeps no transcript file: a client reads the session's events instead.
        "transcript_path": "",
        "cwd": str(workspace),
        "hook_event_name": CLAUDE_EVENTS[event],
        "blitz_event": event,
        "permission_mode": _MODES.get(mode, "default"),
        "principal": principal,
    }


def pre_tool(
    base: Common, approval: t.ApprovalRequest, tool_input: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        **base,
        "tool_name": claude_name(approval.tool),
        "blitz_tool_name": approval.tool,
        "tool_input": dict(tool_input),
        "tool_use_id": approval.request_id,
        "action": {
            "kind": _KINDS.get(approval.kind, "other"),
            "detail": approval.detail,
            "scope_label": approval.scope_label,
        },
    }


def post_tool(
    base: Common,
    *,
    tool: str,
    call_id: str,
    tool_input: Mapping[str, Any],
    response: Mapping[str, Any],
    is_error: bool,
) -> dict[str, Any]:
    return {
        **base,
        "tool_name": claude_name(tool),
        "blitz_tool_name": tool,
        "tool_input": dict(tool_input),
        "tool_response": dict(response),
        "tool_use_id": call_id,
        "is_error": is_error,
    }


def turn_start(base: Common, prompt: str) -> dict[str, Any]:
    return {**base, "prompt": prompt}


def turn_end(base: Common, *, output: str, went_on: bool) -> dict[str, Any]:
    return {**base, "stop_hook_active": went_on, "last_assistant_message": output}


def notification(base: Common, requests: list[t.TurnEvent]) -> dict[str, Any]:
    asks = []
    for event in requests:
        if event.HasField("approval_request"):
            a = event.approval_request
            asks.append(f"Blitz needs your permission to use {a.tool}: {a.detail}")
        elif event.HasField("question"):
            asks.append(f"Blitz asks: {event.question.question}")
    return {
        **base,
        "message": "\n".join(asks) or "Blitz is waiting for your input",
        "title": "Blitz",
        "notification_type": "permission_prompt"
        if any(e.HasField("approval_request") for e in requests)
        else "question",
        "request_ids": [
            e.approval_request.request_id
            if e.HasField("approval_request")
            else e.question.request_id
            for e in requests
        ],
    }


def sample(event: str, *, workspace: str) -> dict[str, Any]:
    """What TestHook sends when its caller gives no input: the event's JSON for a made-up
    turn (pre_tool and post_tool: a `git status`)."""
    base = common(
        event,
        session_id="s_test",
        turn_id="t_test",
        workspace=workspace,
        mode=t.SESSION_MODE_ASK,
        principal="",
    )
    command = t.ApprovalRequest(
        request_id="call_test",
        tool="run_command",
        kind=t.ACTION_KIND_COMMAND,
        detail="git status",
        scope_label="command: git status",
    )
    tool_input = {"command": "git status", "network": False, "git": False}
    if event == "pre_tool":
        return pre_tool(base, command, tool_input)
    if event == "post_tool":
        return post_tool(
            base,
            tool="run_command",
            call_id="call_test",
            tool_input=tool_input,
            response={"command": "git status", "exit_code": 0, "output": "nothing to commit\n"},
            is_error=False,
        )
    if event == "turn_start":
        return turn_start(base, "Test the hook")
    if event == "turn_end":
        return turn_end(base, output="Done.", went_on=False)
    asked = t.TurnEvent(approval_request=command)
    return notification(base, [asked])
