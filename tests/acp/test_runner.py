"""The ACP runner, row by row (docs/agents.md's tables), against the scripted agent.

Each test scripts what the agent says and asks (support/scripted_agent.py), runs turns
through a whole core, and checks the events in the log and what the agent was answered
(its record). Test names carry the rows they check (U2, A1, S2, F3…).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.acp_script import read_record
from support.wire import expect_error, follow_until_finished, until

from blitz.config import Settings
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

Script = Callable[..., Path]


def kinds(events: list[t.TurnEvent]) -> list[str]:
    return [e.WhichOneof("kind") or "" for e in events]


def finished(events: list[t.TurnEvent]) -> t.TurnFinished:
    assert events[-1].HasField("finished"), kinds(events)
    return events[-1].finished


def answers(path: Path, method: str) -> list[Any]:
    """What Blitz answered the agent's `method` requests, in order."""
    return [
        r.get("result", r.get("error"))
        for r in read_record(path)
        if r.get("method") == method and r.get("dir") in ("result", "error")
    ]


def received(path: Path, method: str) -> list[dict[str, Any]]:
    return [
        r["params"] for r in read_record(path) if r.get("dir") == "in" and r.get("method") == method
    ]


def turn(*steps: dict[str, Any], match: str = "") -> dict[str, Any]:
    return {"match": match, "steps": list(steps)}


def workspace_of(settings: Settings, session: s.Session) -> Path:
    return settings.workspace_root / session.workspace


# C1, C14: choosing the agent


async def test_c1_create_session_names_a_declared_agent_or_fails_on_agent(served) -> None:
    async with served() as wire:
        info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
        assert [(a.name, a.kind, a.display_name) for a in info.agents] == [
            ("blitz", "builtin", "Blitz"),
            ("scripted", "acp", "Scripted"),
        ]
        error = await expect_error(
            wire.create_session(agent="nobody"), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.info.metadata["field"] == "agent"
        assert error.info.metadata["accepted"] == "blitz,scripted"
        error = await expect_error(
            wire.create_session(agent="scripted", model="demo"),
            "invalid_argument",
            "INVALID_ARGUMENT",
        )
        assert error.info.metadata["field"] == "model"
        builtin = await wire.create_session()
        assert (builtin.agent, builtin.model) == ("blitz", "demo")
        acp = await wire.create_session(agent="scripted")
        assert (acp.agent, acp.model) == ("scripted", "acp:scripted")


async def test_c9_an_acp_session_is_neither_forked_nor_rewound(served, script: Script) -> None:
    script(turns=[turn({"say": "one"})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        events = await wire.run_all(session.id, "hi")
        turn_id = events[-1].turn_id
        for method, request in (
            ("ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=turn_id)),
            ("RewindSession", s.RewindSessionRequest(session_id=session.id, to_turn_id=turn_id)),
        ):
            error = await expect_error(
                wire.call(method, request), "invalid_argument", "INVALID_ARGUMENT"
            )
            assert error.info.metadata["agent"] == "scripted"


# B1, B3, B10, U2, U3, S1: a plain turn


async def test_b1_b3_b10_u2_u3_s1_text_and_thoughts_stream_then_repeat_whole(
    served, script: Script, settings: Settings
) -> None:
    path = script(
        turns=[
            turn(
                {"think": "pondering"},
                {"say": "hello there", "chunks": 3},
            )
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        events = await wire.run_all(session.id, "hi")
    texts = [e.text for e in events if e.HasField("text")]
    assert "".join(x.text for x in texts if x.partial and not x.thought) == "hello there"
    assert [x.text for x in texts if x.repeat and not x.thought] == ["hello there"]
    assert [x.text for x in texts if x.repeat and x.thought] == ["pondering"]
    assert finished(events).output == "hello there"
    assert not finished(events).HasField("error")
    init = received(path, "initialize")[0]
    assert init["protocolVersion"] == 1
    assert init["clientCapabilities"] == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
    }
    new = received(path, "session/new")[0]
    assert new["cwd"] == str(workspace_of(settings, session).resolve())
    prompt = received(path, "session/prompt")[0]
    assert prompt["prompt"][0] == {"type": "text", "text": "hi"}


async def test_u13_usage_is_one_ledger_entry_or_tokens_unknown(served, script: Script) -> None:
    script(
        turns=[
            turn(
                {"say": "counted"},
                {
                    "stop": "end_turn",
                    "usage": {
                        "input_tokens": 10,
                        "output_tokens": 5,
                        "total_tokens": 15,
                        "cached_read_tokens": 2,
                    },
                },
                match="count",
            ),
            turn({"say": "uncounted"}),
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        counted = await wire.run_all(session.id, "count please")
        uncounted = await wire.run_all(session.id, "again")
    usage = [e.usage for e in counted if e.HasField("usage")]
    assert len(usage) == 1
    assert (usage[0].input, usage[0].output, usage[0].cached) == (10, 5, 2)
    unknown = [e.usage for e in uncounted if e.HasField("usage")]
    assert len(unknown) == 1 and unknown[0].tokens_unknown


# U5, U6, U7: tool calls and the plan


async def test_u5_u6_u7_tool_calls_outputs_results_and_tasks(
    served, script: Script, settings: Settings
) -> None:
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        ws = workspace_of(settings, session)
        script(
            turns=[
                turn(
                    {
                        "plan": [
                            {"content": "look", "status": "in_progress", "priority": "high"},
                            {"content": "tell", "status": "pending", "priority": "low"},
                        ]
                    },
                    {
                        "tool": {
                            "id": "c1",
                            "title": "Read notes",
                            "kind": "read",
                            "status": "pending",
                            "raw_input": {"path": "notes.md"},
                            "locations": [{"path": str(ws / "notes.md")}],
                        }
                    },
                    {"tool_update": {"id": "c1", "status": "in_progress"}},
                    {
                        "tool_update": {
                            "id": "c1",
                            "content": [
                                {"type": "content", "content": {"type": "text", "text": "line 1\n"}}
                            ],
                        }
                    },
                    {
                        "tool_update": {
                            "id": "c1",
                            "status": "completed",
                            "content": [
                                {
                                    "type": "content",
                                    "content": {"type": "text", "text": "line 1\nline 2\n"},
                                }
                            ],
                        }
                    },
                    {"say": "done"},
                )
            ]
        )
        events = await wire.run_all(session.id, "go")
    calls = [e.tool_call for e in events if e.HasField("tool_call")]
    assert calls[0].partial and calls[0].id == "c1" and calls[0].name == "read"
    final = [c for c in calls if not c.partial]
    assert len(final) == 1 and final[0].args["title"] == "Read notes"
    assert list(final[0].args["locations"]) == ["notes.md"]
    outputs = [e.tool_output.output for e in events if e.HasField("tool_output")]
    assert outputs == ["line 1\n", "line 2\n"]
    result = next(e.tool_result for e in events if e.HasField("tool_result"))
    assert result.id == "c1" and not result.is_error
    assert result.result["output"] == "line 1\nline 2\n"
    tasks = next(e.tasks for e in events if e.HasField("tasks"))
    assert [(x.id, x.content, x.status) for x in tasks.items] == [
        ("1", "look", "in_progress"),
        ("2", "tell", "pending"),
    ]


# A1, K, D: permission requests are approvals


async def test_a1_k_d_a_permission_parks_and_another_client_decides_it(
    served, script: Script, settings: Settings
) -> None:
    path = script(
        turns=[
            turn(
                {
                    "tool": {
                        "id": "c1",
                        "title": "Run tests",
                        "kind": "execute",
                        "status": "pending",
                        "raw_input": {"command": ["bash", "-lc", "make test"]},
                    }
                },
                {"permission": {"id": "c1"}},
                {"tool_update": {"id": "c1", "status": "completed"}},
                {"say": "ran"},
            )
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "test it")
        asked = await until(stream, "approval_request")
        approval = asked.approval_request
        assert (approval.kind, approval.detail, approval.scope_label) == (
            t.ACTION_KIND_COMMAND,
            "make test",
            "command: make test",
        )
        assert approval.request_id == "c1"
        parked = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
        assert parked.state == s.SESSION_STATE_PARKED
        await wire.decide(session.id, asked, "once")
        rest = [e async for e in stream]
    assert finished(rest).output == "ran"
    outcome = answers(path, "session/request_permission")[0]
    assert outcome == {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def test_d_a_deny_answers_reject_once_and_always_stays_blitzs_rule(
    served, script: Script
) -> None:
    path = script(
        turns=[
            turn(
                {
                    "permission": {
                        "id": "c1",
                        "kind": "execute",
                        "title": "rm",
                        "raw_input": {"command": "rm -rf build"},
                    }
                },
                {
                    "permission": {
                        "id": "c2",
                        "kind": "execute",
                        "title": "ls",
                        "raw_input": {"command": "ls"},
                    }
                },
                {"say": "over"},
                match="go",
            ),
            turn(
                {
                    "permission": {
                        "id": "c3",
                        "kind": "execute",
                        "title": "ls",
                        "raw_input": {"command": "ls"},
                    }
                },
                {"say": "ruled"},
                match="again",
            ),
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "go")
        await wire.decide_next(stream, session.id, "deny", reason="not that")
        await wire.decide_next(stream, session.id, "always")
        rest = [e async for e in stream]
        assert finished(rest).output == "over"
        rules = await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))
        assert [r.scope_label for r in rules.rules] == ["command: ls"]
        # The rule decides the same request next time, without parking.
        events = await wire.run_all(session.id, "again")
    outcomes = answers(path, "session/request_permission")
    assert outcomes[0] == {"outcome": {"outcome": "selected", "optionId": "reject"}}
    assert outcomes[1] == {"outcome": {"outcome": "selected", "optionId": "allow"}}
    assert finished(events).output == "ruled"
    assert not any(e.HasField("approval_request") for e in events)
    assert any(e.HasField("resolution") for e in events)
    assert outcomes[2] == {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def test_modes_read_only_refuses_and_bypass_allows_without_asking(
    served, script: Script
) -> None:
    path = script(
        turns=[
            turn(
                {"permission": {"id": "w1", "kind": "edit", "title": "Edit a.txt"}},
                {"permission": {"id": "r1", "kind": "read", "title": "Read a.txt"}},
                {"say": "end"},
            )
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted", mode=t.SESSION_MODE_READ_ONLY)
        stream = wire.run(session.id, "go")
        asked = await until(stream, "approval_request")
        # The edit was refused without asking; the read is asked.
        assert asked.approval_request.request_id == "r1"
        await wire.decide(session.id, asked, "once")
        rest = [e async for e in stream]
        assert finished(rest).output == "end"
    outcomes = answers(path, "session/request_permission")
    assert outcomes[0]["outcome"]["optionId"] == "reject"
    assert outcomes[1]["outcome"]["optionId"] == "allow"


# A2, A3: files through Blitz


async def test_a2_a3_reads_answer_and_writes_ask_with_blitzs_diff(
    served, script: Script, settings: Settings
) -> None:
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        ws = workspace_of(settings, session)
        (ws / "notes.md").write_text("alpha\nbeta\ngamma\n")
        path = script(
            turns=[
                turn(
                    {"read": {"path": "notes.md", "line": 2, "limit": 1}},
                    {"read": {"path": "missing.md"}},
                    {"write": {"path": "out/new.txt", "content": "fresh\n"}},
                    {"say": "wrote"},
                )
            ]
        )
        stream = wire.run(session.id, "files")
        asked = await until(stream, "approval_request")
        approval = asked.approval_request
        assert (approval.kind, approval.detail) == (t.ACTION_KIND_WRITE, "out/new.txt")
        assert "+fresh" in approval.diff
        await wire.decide(session.id, asked, "once")
        rest = [e async for e in stream]
    assert finished(rest).output == "wrote"
    assert (ws / "out/new.txt").read_text() == "fresh\n"
    changed = [e.file_changed for e in rest if e.HasField("file_changed")]
    assert [(c.path, c.kind) for c in changed] == [("out/new.txt", t.FileChanged.KIND_CREATED)]
    reads = answers(path, "fs/read_text_file")
    assert reads[0] == {"content": "beta\n"}
    assert reads[1]["code"] == -32002


async def test_a3_a_path_out_of_the_workspace_is_refused(served, script: Script) -> None:
    path = script(
        turns=[
            turn(
                {"read": {"path": "/etc/passwd"}},
                {"write": {"path": "../escape.txt", "content": "x"}},
                {"say": "ok"},
            )
        ]
    )
    async with served() as wire:
        session = (
            await wire.create_session(agent="scripted", mode=t.SESSION_MODE_BYPASS)
            if False
            else await wire.create_session(agent="scripted")
        )
        stream = wire.run(session.id, "x")
        events = []
        async for event in stream:
            events.append(event)
            if event.HasField("approval_request"):
                await wire.decide(session.id, event, "once")
    assert answers(path, "fs/read_text_file")[0]["code"] == -32602
    assert "code" in answers(path, "fs/write_text_file")[0]


# A4-A8: terminals in the command box


async def test_a4_a8_a_terminal_runs_after_its_approval_and_streams(served, script: Script) -> None:
    path = script(
        turns=[
            turn(
                {
                    "tool": {
                        "id": "t1",
                        "title": "echo",
                        "kind": "execute",
                        "status": "pending",
                        "raw_input": {"command": "echo one; echo two"},
                    }
                },
                {"permission": {"id": "t1"}},
                {"terminal": {"command": "echo one; echo two", "tool_id": "t1"}},
                {"tool_update": {"id": "t1", "status": "completed"}},
                {"say": "echoed"},
            )
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "run it")
        asked = await until(stream, "approval_request")
        await wire.decide(session.id, asked, "once")
        rest = [e async for e in stream]
    assert finished(rest).output == "echoed"
    # One approval covered both the permission and the terminal it asked for.
    assert not any(e.HasField("approval_request") for e in rest)
    assert "one\ntwo\n" in "".join(e.tool_output.output for e in rest if e.HasField("tool_output"))
    waited = answers(path, "terminal/wait_for_exit")[0]
    assert waited["exitCode"] == 0
    assert answers(path, "terminal/output")[0]["output"] == "one\ntwo\n"


# B11, S5: cancel while a permission is open


async def test_b11_s5_cancel_while_a_permission_waits(served, script: Script) -> None:
    path = script(
        turns=[
            turn(
                {
                    "permission": {
                        "id": "c1",
                        "kind": "execute",
                        "title": "x",
                        "raw_input": {"command": "touch never"},
                    }
                },
                {"say": "should not"},
            )
        ]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "go")
        await until(stream, "approval_request")
        await wire.call("Cancel", s.CancelRequest(session_id=session.id))
        rest = [e async for e in stream]
    assert finished(rest).error.reason == "CANCELLED"
    assert answers(path, "session/request_permission")[0] == {"outcome": {"outcome": "cancelled"}}
    assert received(path, "session/cancel")


# S2-S8: how a prompt ends


@pytest.mark.parametrize(
    ("stop", "reason"),
    [
        ("max_tokens", "MAX_TOKENS"),
        ("max_turn_requests", "MAX_TURNS"),
        ("refusal", "REFUSED"),
        ("cancelled", "CANCELLED"),
        ("bogus", "AGENT_PROTOCOL_ERROR"),
    ],
)
async def test_s2_s8_stop_reasons(served, script: Script, stop: str, reason: str) -> None:
    script(turns=[turn({"say": "partial"}, {"stop": stop})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        events = await wire.run_all(session.id, "go")
    assert finished(events).error.reason == reason


async def test_s7_an_error_answer_is_agent_error(served, script: Script) -> None:
    script(turns=[turn({"error": {"code": -32603, "message": "boom"}})])
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        events = await wire.run_all(session.id, "go")
    error = finished(events).error
    assert error.reason == "AGENT_ERROR" and "boom" in error.message


# Table F: faults end the turn, and the next turn starts a new process


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        ({"crash": 3}, "AGENT_CRASHED"),
        ({"raw": "this is not json"}, "AGENT_PROTOCOL_ERROR"),
        ({"raw_bytes": 9_000_000}, "AGENT_PROTOCOL_ERROR"),
        ({"call": {"method": "foo/bar", "params": {}}}, "AGENT_PROTOCOL_ERROR"),
    ],
    ids=["F3-crash", "F5-garbage", "F6-oversized", "F7-unknown-method"],
)
async def test_f_faults_end_the_turn_with_stderr_and_the_session_goes_on(
    served, script: Script, step: dict[str, Any], reason: str
) -> None:
    script(
        turns=[turn({"stderr": "about to fail"}, step, match="fail"), turn({"say": "recovered"})]
    )
    async with served() as wire:
        session = await wire.create_session(agent="scripted")
        other = await wire.create_session()
        events = await wire.run_all(session.id, "fail now")
        assert finished(events).error.reason == reason, finished(events)
        if reason == "AGENT_CRASHED":
            assert finished(events).error.metadata["exit_code"] == "3"
            notes = [e.notice.text for e in events if e.HasField("notice") and e.notice.error]
            assert any("about to fail" in n for n in notes), notes
        again = await wire.run_all(session.id, "go on")
        assert finished(again).output == "recovered"
        built_in = await wire.run_all(other.id, "hello")
        assert not finished(built_in).HasField("error")


async def test_f4_silence_past_the_deadline_is_agent_timeout(
    served, script: Script, acp_settings: Settings
) -> None:
    from dataclasses import replace

    script(turns=[turn({"hang": "turn"})])
    agent = replace(acp_settings.agents[0], silence_timeout=2.0)
    async with served(agents=(agent,)) as wire:
        session = await wire.create_session(agent="scripted")
        events = await asyncio.wait_for(wire.run_all(session.id, "go"), 60)
    assert finished(events).error.reason == "AGENT_TIMEOUT"


async def test_f2_no_answer_to_initialize_is_agent_timeout(
    served, script: Script, acp_settings: Settings
) -> None:
    from dataclasses import replace

    script(init={"hang": True}, turns=[])
    agent = replace(acp_settings.agents[0], start_timeout=2.0)
    async with served(agents=(agent,)) as wire:
        session = await wire.create_session(agent="scripted")
        events = await asyncio.wait_for(wire.run_all(session.id, "go"), 60)
    assert finished(events).error.reason == "AGENT_TIMEOUT"


# Restarts: a parked turn survives where the agent loads its session


async def test_b4_a_parked_turn_survives_a_restart_through_session_load(
    acp_settings: Settings, script: Script
) -> None:
    from support.in_process import in_process

    path = script(
        turns=[
            turn({"say": "deployed after the restart"}, match="restarted"),
            turn(
                {
                    "permission": {
                        "id": "c1",
                        "kind": "execute",
                        "title": "deploy",
                        "raw_input": {"command": "make deploy"},
                    }
                },
                {"say": "first process"},
                match="deploy",
            ),
        ]
    )
    async with in_process(acp_settings) as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "deploy it")
        asked = await until(stream, "approval_request")
        await stream.aclose()
    async with in_process(acp_settings) as wire:
        await wire.decide(session.id, asked, "once")
        events = await follow_until_finished(wire, session.id)
    assert finished(events).output == "deployed after the restart"
    loads = received(path, "session/load")
    assert loads and loads[0]["sessionId"] == received(path, "session/new")[0].get(
        "sessionId", loads[0]["sessionId"]
    )
    prompts = [p["prompt"][0]["text"] for p in received(path, "session/prompt")]
    assert "approved it" in prompts[-1]


# A turn that asks one permission of the person, and parks on it.
_ASKS_ONCE = turn(
    {"permission": {"id": "c1", "kind": "execute", "title": "x", "raw_input": {"command": "x"}}}
)


async def parked_on_a_permission(settings: Settings) -> tuple[s.Session, t.TurnEvent]:
    """A session of the scripted agent whose turn parked on `_ASKS_ONCE`, on a server
    since stopped: the session, and the event that asked."""
    from support.in_process import in_process

    async with in_process(settings) as wire:
        session = await wire.create_session(agent="scripted")
        stream = wire.run(session.id, "go")
        asked = await until(stream, "approval_request")
        await stream.aclose()
    return session, asked


async def test_b4_without_session_load_a_parked_turn_ends_agent_unavailable(
    acp_settings: Settings, script: Script
) -> None:
    from support.in_process import in_process

    script(load_session=False, turns=[_ASKS_ONCE])
    session, asked = await parked_on_a_permission(acp_settings)
    async with in_process(acp_settings) as wire:
        await wire.decide(session.id, asked, "once")
        events = await follow_until_finished(wire, session.id)
    assert finished(events).error.reason == "AGENT_UNAVAILABLE"


async def test_on_a_server_that_declares_no_agent_an_acp_sessions_turns_end_agent_unavailable(
    acp_settings: Settings, script: Script
) -> None:
    """With its `[agents.NAME]` table removed (the server then serves ACP sessions with
    `claims.NoAgentsDeclared`), the session's parked turn and its next one end
    AGENT_UNAVAILABLE, naming the agent. That such a server imports no ACP code is
    test_no_agents.py's."""
    from dataclasses import replace

    from support.in_process import in_process

    script(turns=[_ASKS_ONCE])
    session, asked = await parked_on_a_permission(acp_settings)
    async with in_process(replace(acp_settings, agents=())) as wire:
        await wire.decide(session.id, asked, "once")
        parked = finished(await follow_until_finished(wire, session.id))
        after = finished(await wire.run_all(session.id, "again"))
        usage = finished(await wire.run_all(session.id, "/usage", command=True))
    for ended in (parked, after):
        assert ended.error.reason == "AGENT_UNAVAILABLE"
        assert "'scripted' is no longer declared" in ended.error.message
    assert not usage.HasField("error")  # the server's own commands still answer


async def test_the_bound_on_processes_stops_the_idle_one(served, script: Script) -> None:
    script(turns=[turn({"say": "ok"})])
    async with served(max_agent_processes=1) as wire:
        first = await wire.create_session(agent="scripted")
        second = await wire.create_session(agent="scripted")
        assert finished(await wire.run_all(first.id, "a")).output == "ok"
        assert finished(await wire.run_all(second.id, "b")).output == "ok"
        assert finished(await wire.run_all(first.id, "c")).output == "ok"
