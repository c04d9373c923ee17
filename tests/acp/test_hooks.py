"""Hooks on an ACP agent's turns (docs/hooks.md): its permission requests go to the
session's pre_tool hooks before its mode and rules, as the built-in agent's actions do,
and a turn_end hook makes it go on. Against the scripted agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.wire import until

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
