"""Hooks on an ACP agent's turns (docs/hooks.md): its permission requests, writes and
terminals go to the session's pre_tool hooks before its mode and rules, as the built-in
agent's actions do; a rewrite of a write or a terminal, which Blitz carries out, is taken;
and a turn_end hook makes it go on. Against the scripted agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.wire import until

from blitz.config import Settings
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t

from .test_runner import answers, finished, turn

Script = Callable[..., Path]

MAKE = {
    "permission": {
        "id": "c1",
        "kind": "execute",
        "title": "Run the tests",
        "raw_input": {"command": "make test"},
    }
}


async def _hook(wire: Any, event: int, command: str, **fields: Any) -> hk.Hook:
    made = await wire.call(
        "CreateHook", hk.CreateHookRequest(event=event, command=command, **fields)
    )
    return made.hook


async def test_a_pre_tool_hook_denies_an_acp_permission_without_asking(served, script: Script):
    path = script(turns=[turn(MAKE, {"say": "done"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        deny = "read line; echo no make on the shared runner >&2; exit 2"
        hook = await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, deny, tools=["Bash"], commands=["make"])
        events = await wire.run_all(session.id, "test it")
    assert not any(e.HasField("approval_request") for e in events)
    [outcome] = [e.hook for e in events if e.HasField("hook")]
    assert (outcome.hook_id, outcome.decision, outcome.tool) == (
        hook.id,
        t.HOOK_DECISION_DENY,
        "execute",
    )
    [resolution] = [e.resolution for e in events if e.HasField("resolution")]
    assert (resolution.via, resolution.decision) == ("hook", t.DECISION_DENY)
    assert answers(path, "session/request_permission")[0]["outcome"]["optionId"] == "reject"
    assert finished(events).output == "done"


async def test_a_pre_tool_hook_allows_an_acp_permission_without_asking(served, script: Script):
    path = script(turns=[turn(MAKE, {"say": "done"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        allow = (
            "cat >/dev/null; echo "
            """'{"hookSpecificOutput": {"permissionDecision": "allow"}}'"""
        )
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, allow)
        events = await wire.run_all(session.id, "test it")
    assert not any(e.HasField("approval_request") for e in events)
    assert answers(path, "session/request_permission")[0]["outcome"]["optionId"] == "allow"


async def test_a_pre_tool_hooks_ask_parks_an_acp_permission_the_mode_would_allow(
    served, script: Script
):
    path = script(turns=[turn(MAKE, {"say": "done"})])
    async with served(allow_bypass_mode=True) as wire:
        session = await wire.create_session(agent="scripted", mode=t.SESSION_MODE_BYPASS)
        ask = """cat >/dev/null; echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'"""
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, ask)
        stream = wire.run(session.id, "test it")
        asked = await until(stream, "approval_request")
        assert asked.approval_request.request_id == "c1"
        await wire.decide(session.id, asked, "deny")
        rest = [e async for e in stream]
    assert finished(rest).output == "done"
    assert answers(path, "session/request_permission")[0]["outcome"]["optionId"] == "reject"


async def test_a_turn_end_hook_makes_an_acp_agent_go_on(served, script: Script, tmp_path: Path):
    script(
        turns=[
            turn({"say": "first answer"}, match="start"),
            turn({"say": "went on"}, match="also"),
        ]
    )
    go_on = tmp_path / "go_on.py"
    go_on.write_text(
        "import json, sys\n"
        "if not json.load(sys.stdin)['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'also check the docs'}))\n"
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        await _hook(wire, hk.HOOK_EVENT_TURN_END, f"python3 {go_on}")
        events = await wire.run_all(session.id, "start")
    decisions = [e.hook.decision for e in events if e.HasField("hook")]
    assert decisions == [t.HOOK_DECISION_CONTINUE, t.HOOK_DECISION_NONE]
    assert finished(events).output == "went on"


def _answering(tmp_path: Path, name: str, answer: dict[str, Any]) -> str:
    """A hook that prints `answer` as its JSON, whatever it is shown."""
    hook = tmp_path / name
    hook.write_text(f"import json, sys\njson.load(sys.stdin)\nprint(json.dumps({answer!r}))\n")
    return f"python3 {hook}"


async def test_a_pre_tool_hooks_rewrite_of_an_acp_write_is_what_blitz_writes(
    served, script: Script, settings: Settings, tmp_path: Path
):
    rewrite = {"permissionDecision": "allow", "updatedInput": {"file_path": "out/moved.txt"}}
    script(turns=[turn({"write": {"path": "out/new.txt", "content": "fresh\n"}}, {"say": "ok"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        hook = _answering(tmp_path, "move.py", {"hookSpecificOutput": rewrite})
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, hook, tools=["Write"])
        events = await wire.run_all(session.id, "write it")
    ws = settings.workspace_root / session.workspace
    assert not any(e.HasField("approval_request") for e in events)
    assert (ws / "out/moved.txt").read_text() == "fresh\n"
    assert not (ws / "out/new.txt").exists()
    [changed] = [e.file_changed for e in events if e.HasField("file_changed")]
    assert changed.path == "out/moved.txt"


async def test_an_acp_write_a_hook_leads_out_of_the_workspace_is_refused_with_the_reason(
    served, script: Script, settings: Settings, tmp_path: Path
):
    rewrite = {"permissionDecision": "allow", "updatedInput": {"file_path": "/etc/escape.txt"}}
    path = script(turns=[turn({"write": {"path": "new.txt", "content": "x"}}, {"say": "ok"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        hook = _answering(tmp_path, "escape.py", {"hookSpecificOutput": rewrite})
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, hook)
        events = await wire.run_all(session.id, "write it")
    [resolution] = [e.resolution for e in events if e.HasField("resolution")]
    assert (resolution.via, resolution.decision) == ("hook", t.DECISION_DENY)
    error = answers(path, "fs/write_text_file")[0]
    assert "rewrite is refused" in error["message"] and "outside the workspace" in error["message"]
    assert not (settings.workspace_root / session.workspace / "new.txt").exists()


async def test_a_hooks_deny_reason_reaches_the_acp_agent_with_its_refused_write(
    served, script: Script
):
    path = script(turns=[turn({"write": {"path": "new.txt", "content": "x"}}, {"say": "ok"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        deny = "cat >/dev/null; echo generated files are not edited by hand >&2; exit 2"
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, deny)
        await wire.run_all(session.id, "write it")
    error = answers(path, "fs/write_text_file")[0]
    assert error["message"] == "denied: generated files are not edited by hand"


async def test_a_rewritten_acp_terminal_asks_as_rewritten_and_runs_the_hooks_line(
    served, script: Script, tmp_path: Path
):
    path = script(turns=[turn({"terminal": {"command": "echo risky"}}, {"say": "ran"})])
    rewrite = {"permissionDecision": "ask", "updatedInput": {"command": "echo safer"}}
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        made = await _hook(
            wire,
            hk.HOOK_EVENT_PRE_TOOL,
            _answering(tmp_path, "safer.py", {"hookSpecificOutput": rewrite}),
        )
        stream = wire.run(session.id, "run it")
        asked = await until(stream, "approval_request")
        request = asked.approval_request
        assert (request.detail, request.scope_label) == ("echo safer", "command: echo safer")
        assert request.hook_edit.hook_id == made.id
        assert request.hook_edit.original_input["command"] == "echo risky"
        await wire.decide(session.id, asked, "once")
        rest = [e async for e in stream]
    assert finished(rest).output == "ran"
    assert answers(path, "terminal/output")[0]["output"] == "safer\n"


async def test_a_rewrite_of_an_acp_permission_is_not_taken_and_the_log_says_so(
    served, script: Script, tmp_path: Path
):
    path = script(turns=[turn(MAKE, {"say": "done"})])
    rewrite = {"permissionDecision": "allow", "updatedInput": {"command": "make lint"}}
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        hook = _answering(tmp_path, "lint.py", {"hookSpecificOutput": rewrite})
        await _hook(wire, hk.HOOK_EVENT_PRE_TOOL, hook)
        events = await wire.run_all(session.id, "test it")
    [outcome] = [e.hook for e in events if e.HasField("hook")]
    assert not outcome.HasField("updated_input")
    assert "nothing of this action may be rewritten" in outcome.reason
    assert answers(path, "session/request_permission")[0]["outcome"]["optionId"] == "allow"
