"""pre_tool rewrites of every tool's input (docs/hooks.md, "Rewriting"): the rewritten input
is what the tool acts with, checked as the model's is, and what a person is shown.

Real turns of the demo model through a whole core, with real hook programs."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.in_process import in_process
from support.wire import decide, drive

from blitz.config import Settings
from blitz.v1 import turn_pb2 as t

from .conftest import Session, hook_events, kinds, only

NOTES_SERVER = Path(__file__).parents[1] / "agent" / "mcp_notes_server.py"


def rewrite(decision: str, **updated: Any) -> dict[str, Any]:
    """A pre_tool answer: `decision` ("" for none) and the input rewritten to `updated`."""
    out: dict[str, Any] = {"updatedInput": updated}
    if decision:
        out["permissionDecision"] = decision
    return {"hookSpecificOutput": out}


def moving_to(session: Session, name: str, target: str, decision: str = "allow") -> str:
    """A Claude Code-style hook that sends a write or an edit to `target`: `file_path`
    only, absolute in the workspace it is told of (`cwd`) unless `target` is absolute."""
    return session.script(
        name,
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        f"path = os.path.join(event['cwd'], {target!r})\n"
        f"print(json.dumps({{'hookSpecificOutput': {{'permissionDecision': {decision!r},"
        " 'updatedInput': {'file_path': path}}}))\n",
    )


async def test_a_rewritten_write_writes_the_hooks_content(session: Session):
    hook = rewrite("allow", content="as the hook has it\n")
    await session.hook("pre_tool", session.answering("content.py", hook), tools=["Write"])
    events = await session.run("write notes.md\n```\nas the model had it\n```")
    assert "approval_request" not in kinds(events)
    assert only(events, "hook").hook.updated_input["content"] == "as the hook has it\n"
    assert (session.workspace / "notes.md").read_text() == "as the hook has it\n"


async def test_a_claude_code_file_path_is_where_the_write_goes(session: Session):
    await session.hook("pre_tool", moving_to(session, "move.py", "drafts/notes.md"))
    events = await session.run("write notes.md\n```\nhello\n```")
    assert "approval_request" not in kinds(events)
    assert not (session.workspace / "notes.md").exists()
    assert (session.workspace / "drafts" / "notes.md").read_text() == "hello\n"
    result = only(events, "tool_result").tool_result
    assert result.result["path"] == "drafts/notes.md"
    [changed] = [e.file_changed for e in events if e.HasField("file_changed")]
    assert changed.path == "drafts/notes.md"


@pytest.mark.parametrize("target", ["/etc/blitz-escape.md", "../escape.md"])
async def test_a_hook_cannot_write_outside_the_workspace(session: Session, target: str):
    hook = await session.hook("pre_tool", moving_to(session, "escape.py", target))
    events = await session.run("write notes.md\n```\nhello\n```")
    assert "approval_request" not in kinds(events)
    resolution = only(events, "resolution").resolution
    assert (resolution.via, resolution.decision, resolution.resolved_by) == (
        "hook",
        t.DECISION_DENY,
        hook.id,
    )
    error = only(events, "tool_result").tool_result.result["error"]
    assert f"the hook {hook.id}'s rewrite is refused" in error
    assert "outside the workspace" in error or "'..'" in error
    assert not (session.workspace / "notes.md").exists()
    assert not (session.workspace.parent / "escape.md").exists()


async def test_a_rewritten_edit_asks_with_its_own_diff_and_makes_it_once_approved(
    session: Session,
):
    (session.workspace / "notes.md").write_text("colour: red\n")
    hook = await session.hook(
        "pre_tool", session.answering("edit.py", rewrite("ask", new_string="colour: blue\n"))
    )
    events = await drive(
        session.wire,
        session.id,
        "edit notes.md\n```\ncolour: red\n```\n```\ncolour: green\n```",
        decide(session.wire, session.id, "once"),
    )
    request = only(events, "approval_request").approval_request
    assert (request.detail, request.scope_label) == ("notes.md", "write: notes.md")
    assert "+colour: blue" in request.diff and "green" not in request.diff
    assert request.hook_edit.hook_id == hook.id
    assert request.hook_edit.original_input["new_string"] == "colour: green\n"
    assert request.hook_edit.input["new_string"] == "colour: blue\n"
    assert request.asked_by_hook == hook.id
    assert (session.workspace / "notes.md").read_text() == "colour: blue\n"
    # The call that ran is shown with the arguments it ran with.
    calls = [e.tool_call for e in events if e.HasField("tool_call") and not e.tool_call.partial]
    assert calls[-1].args["new_string"] == "colour: blue\n"


async def test_a_rewritten_delete_deletes_the_hooks_file(session: Session):
    (session.workspace / "keep.txt").write_text("kept")
    (session.workspace / "scratch.txt").write_text("gone")
    await session.hook(
        "pre_tool", session.answering("del.py", rewrite("allow", path="scratch.txt"))
    )
    events = await session.run("delete keep.txt")
    assert only(events, "tool_result").tool_result.result["path"] == "scratch.txt"
    assert (session.workspace / "keep.txt").exists()
    assert not (session.workspace / "scratch.txt").exists()


async def test_a_rewritten_url_is_asked_for_as_its_own_origin(session: Session):
    hook = await session.hook(
        "pre_tool",
        session.answering("url.py", rewrite("", url="https://docs.example.org/page")),
    )
    events = await drive(
        session.wire,
        session.id,
        "fetch https://example.com/page",
        decide(session.wire, session.id, "deny"),
    )
    request = only(events, "approval_request").approval_request
    assert request.scope_label == "network: https://docs.example.org:443"
    assert request.detail.startswith("GET https://docs.example.org/page")
    assert request.hook_edit.hook_id == hook.id
    assert request.hook_edit.original_input["url"] == "https://example.com/page"


async def test_a_rewritten_url_passes_the_address_checks(session: Session):
    hook = await session.hook(
        "pre_tool",
        session.answering("meta.py", rewrite("allow", url="http://169.254.169.254/latest/")),
    )
    events = await session.run("fetch https://example.com/page")
    assert "approval_request" not in kinds(events)
    assert only(events, "resolution").resolution.decision == t.DECISION_DENY
    error = only(events, "tool_result").tool_result.result["error"]
    assert f"the hook {hook.id}'s rewrite is refused" in error and "blocked" in error


async def test_a_rewrite_of_another_type_is_ignored(session: Session):
    await session.hook("pre_tool", session.answering("typed.py", rewrite("allow", content=42)))
    events = await session.run("write notes.md\n```\nhello\n```")
    outcome = only(events, "hook").hook
    assert not outcome.HasField("updated_input") and "ignored" in outcome.reason
    assert (session.workspace / "notes.md").read_text() == "hello\n"


@pytest.fixture
async def mcp_session(hook_settings: Settings, tmp_path: Path) -> AsyncIterator[Session]:
    """A session of a core whose agent has the test MCP server `notes`."""
    config = tmp_path / "mcp.json"
    servers = {"notes": {"command": sys.executable, "args": [str(NOTES_SERVER)]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    async with in_process(replace(hook_settings, mcp_config=str(config))) as wire:
        made = await wire.create_session()
        yield Session(wire, made, hook_settings.workspace_root / made.workspace)


async def test_a_rewritten_mcp_call_sends_the_hooks_arguments(mcp_session: Session):
    session = mcp_session
    await session.hook(
        "pre_tool",
        session.answering("mcp.py", rewrite("allow", text="buy oat milk")),
        tools=["mcp__notes__*"],
    )
    events = await session.run('call notes.note {"text": "buy milk"}')
    assert [h.decision for h in hook_events(events)] == [t.HOOK_DECISION_ALLOW]
    assert (session.workspace / "notes.txt").read_text() == "buy oat milk\n"
