"""The scripted ACP agent (support/scripted_agent.py) does each step its script says.

Blitz's ACP client is tested against that agent, so the agent must first be shown to say
and ask exactly what it is scripted to: here it is driven by the ACP SDK's own client,
which is not Blitz's and so cannot share a misreading of the protocol with it. Each test
starts the agent as a child process (about half a second, the SDK's import).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from pydantic import ValidationError
from support.acp_script import agent_command, agent_env, read_record, write_script

MODES = {
    "current": "default",
    "available": [{"id": "default", "name": "Ask"}, {"id": "plan", "name": "Plan"}],
}


class Terminal:
    """A command the agent asked the client to run, its output kept as it comes."""

    def __init__(self, process: asyncio.subprocess.Process, limit: int | None) -> None:
        self.process = process
        self.output = b""
        self.limit = limit
        self.reading = asyncio.get_running_loop().create_task(self.read())

    async def read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk

    async def wait(self) -> int:
        code = await self.process.wait()
        await self.reading
        return code

    def text(self) -> tuple[str, bool]:
        if self.limit is not None and len(self.output) > self.limit:
            return self.output[-self.limit :].decode(errors="replace"), True
        return self.output.decode(errors="replace"), False


class Client:
    """A small ACP client: it keeps every session/update, answers permission requests from
    `answers` (an option id, or "cancelled"), serves files under `root` and runs terminals."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.updates: list[Any] = []
        self.answers: list[str] = []
        self.asked: list[ToolCallUpdate] = []
        self.offered: list[list[PermissionOption]] = []
        self.terminals: dict[str, Terminal] = {}

    def of(self, kind: str) -> list[Any]:
        return [update for update in self.updates if update.session_update == kind]

    def said(self) -> str:
        return "".join(update.content.text for update in self.of("agent_message_chunk"))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.offered.append(options)
        answer = self.answers.pop(0)
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    def inside(self, path: str) -> Path:
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.root.resolve()):
            raise RequestError.invalid_params({"path": path, "reason": "outside the workspace"})
        return resolved

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        file = self.inside(path)
        if not file.exists():
            raise RequestError.resource_not_found(path)
        lines = file.read_text().splitlines(keepends=True)
        start = (line or 1) - 1
        end = start + limit if limit is not None else None
        return ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.inside(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> CreateTerminalResponse:
        process = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            " ".join([command, *(args or [])]),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd or self.root,
            env={**os.environ, **{variable.name: variable.value for variable in env or []}},
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = Terminal(process, output_byte_limit)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=await self.terminals[terminal_id].wait())

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        output, truncated = terminal.text()
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        return TerminalOutputResponse(output=output, truncated=truncated, exit_status=status)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> KillTerminalResponse:
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is None:
            # The whole group: the shell's children hold its output open too.
            os.killpg(terminal.process.pid, signal.SIGKILL)
        await terminal.wait()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> ReleaseTerminalResponse:
        await self.kill_terminal(session_id, terminal_id)
        del self.terminals[terminal_id]
        return ReleaseTerminalResponse()


CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


@pytest.fixture
def client(tmp_path: Path) -> Client:
    root = tmp_path / "ws"
    root.mkdir()
    return Client(root)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return tmp_path / "script.json"


@asynccontextmanager
async def agent(
    client: Client, script: Path, *, observe: list[dict[str, Any]] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """The agent running `script`, its HOME beside the script; every raw message it sends
    appended to `observe` when given."""

    def seen(event: StreamEvent) -> None:
        if observe is not None and event.direction is StreamDirection.INCOMING:
            observe.append(event.message)

    command, *args = agent_command(script)
    async with spawn_agent_process(
        client,
        command,
        *args,
        env=agent_env(script.parent),
        cwd=client.root,
        observers=[seen],
    ) as (conn, process):
        yield conn, process


async def start(conn: ClientSideConnection, client: Client) -> str:
    """Initialize and open a session in the client's folder; its id."""
    await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
    session = await conn.new_session(cwd=str(client.root), mcp_servers=[])
    return session.session_id


async def test_initialize_and_new_session_answer_as_scripted(client: Client, script: Path) -> None:
    """Capabilities, agent info and modes come from the script; session/new's cwd and MCP
    servers are recorded, and the script's commands follow session/new's answer."""
    write_script(
        script,
        protocol_version=1,
        load_session=False,
        prompt_capabilities={"image": True, "embedded_context": True},
        agent_info={"name": "scripted", "version": "2.5"},
        modes=MODES,
        commands=[{"name": "review", "description": "Review the code", "hint": "what"}],
    )
    async with agent(client, script) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        session = await conn.new_session(cwd=str(client.root), mcp_servers=[])
        for _ in range(100):
            if client.of("available_commands_update"):
                break
            await asyncio.sleep(0.01)
    assert init.protocol_version == 1
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.load_session is False
    assert init.agent_capabilities.prompt_capabilities is not None
    assert init.agent_capabilities.prompt_capabilities.image is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert init.agent_info is not None and init.agent_info.version == "2.5"
    assert session.modes is not None and session.modes.current_mode_id == "default"
    assert [mode.id for mode in session.modes.available_modes] == ["default", "plan"]
    [commands] = client.of("available_commands_update")
    assert commands.available_commands[0].name == "review"
    assert commands.available_commands[0].input.root.hint == "what"
    received = read_record(script)
    assert [entry["method"] for entry in received] == ["initialize", "session/new"]
    assert received[0]["params"]["clientCapabilities"]["terminal"] is True
    assert received[1]["params"] == {"cwd": str(client.root), "mcpServers": []}


async def test_each_update_step_sends_its_session_update(client: Client, script: Path) -> None:
    """say (in chunks, with a message id), think, user_echo, tool, tool_update, plan, mode,
    commands, title and usage_update each arrive as the session/update the schema names."""
    steps = [
        {"user_echo": "hello"},
        {"think": "pondering"},
        {"say": "Hello there", "chunks": 3, "message_id": "m1"},
        {
            "tool": {
                "id": "c1",
                "title": "Run ls",
                "kind": "execute",
                "status": "pending",
                "raw_input": {"command": "ls"},
                "content": [{"type": "content", "content": {"type": "text", "text": "ls"}}],
                "locations": [{"path": "/abs/file.py", "line": 3}],
            }
        },
        {"tool_update": {"id": "c1", "status": "completed", "raw_output": {"code": 0}}},
        {"plan": [{"content": "Look", "status": "in_progress"}, {"content": "Fix"}]},
        {"mode": "plan"},
        {"commands": [{"name": "review", "description": "Review"}]},
        {"title": "A title"},
        {"usage_update": {"used": 100, "size": 1000, "cost": {"amount": 0.01, "currency": "USD"}}},
    ]
    write_script(script, modes=MODES, turns=[{"match": "", "steps": steps}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert answer.stop_reason == "end_turn"
    kinds = [update.session_update for update in client.updates]
    assert kinds == [
        "user_message_chunk",
        "agent_thought_chunk",
        *["agent_message_chunk"] * 3,
        "tool_call",
        "tool_call_update",
        "plan",
        "current_mode_update",
        "available_commands_update",
        "session_info_update",
        "usage_update",
    ]
    chunks = client.of("agent_message_chunk")
    assert [chunk.content.text for chunk in chunks] == ["Hell", "o th", "ere"]
    assert {chunk.message_id for chunk in chunks} == {"m1"}
    [tool] = client.of("tool_call")
    assert (tool.tool_call_id, tool.title, tool.kind, tool.status) == (
        "c1",
        "Run ls",
        "execute",
        "pending",
    )
    assert tool.raw_input == {"command": "ls"}
    assert tool.content[0].content.text == "ls"
    assert tool.locations[0].path == "/abs/file.py" and tool.locations[0].line == 3
    [progress] = client.of("tool_call_update")
    assert progress.status == "completed" and progress.raw_output == {"code": 0}
    assert progress.title is None
    [plan] = client.of("plan")
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("Look", "in_progress", "medium"),
        ("Fix", "pending", "medium"),
    ]
    assert client.of("current_mode_update")[0].current_mode_id == "plan"
    assert client.of("session_info_update")[0].title == "A title"
    [usage] = client.of("usage_update")
    assert (usage.used, usage.size, usage.cost.amount, usage.cost.currency) == (
        100,
        1000,
        0.01,
        "USD",
    )


async def test_a_turn_is_chosen_by_the_prompt_and_the_script_is_reread(
    client: Client, script: Path
) -> None:
    """The first turn whose match is in the prompt runs, none says so; a script rewritten
    between turns is the one the next prompt follows."""
    turns = [
        {"match": "weather", "steps": [{"say": "sunny"}]},
        {"match": "", "steps": [{"say": "anything"}]},
    ]
    write_script(script, turns=turns)
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        prompt = [text_block("what is the"), text_block("weather like?")]
        await conn.prompt(session_id=session_id, prompt=prompt)
        await conn.prompt(session_id=session_id, prompt=[text_block("hello")])
        write_script(script, turns=[{"match": "weather", "steps": [{"say": "rain"}]}])
        await conn.prompt(session_id=session_id, prompt=[text_block("weather?")])
        await conn.prompt(session_id=session_id, prompt=[text_block("hello")])
    assert client.said() == "sunnyanythingrainno script for this prompt"
    prompts = [entry for entry in read_record(script) if entry["method"] == "session/prompt"]
    assert prompts[0]["params"]["prompt"] == [
        {"type": "text", "text": "what is the"},
        {"type": "text", "text": "weather like?"},
    ]


async def test_permission_allowed_rejected_and_cancelled(client: Client, script: Path) -> None:
    """The client's choice is recorded; a reject with on_reject "stop" says "rejected" and
    ends the turn; a cancelled outcome ends it `cancelled`."""
    ask = {
        "id": "c1",
        "title": "Run rm",
        "kind": "execute",
        "raw_input": {"command": "rm x"},
        "on_reject": "stop",
    }
    steps = [{"permission": ask}, {"say": "done"}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    client.answers = ["allow", "reject", "cancelled"]
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        allowed = await conn.prompt(session_id=session_id, prompt=[text_block("1")])
        rejected = await conn.prompt(session_id=session_id, prompt=[text_block("2")])
        cancelled = await conn.prompt(session_id=session_id, prompt=[text_block("3")])
    assert [allowed.stop_reason, rejected.stop_reason, cancelled.stop_reason] == [
        "end_turn",
        "end_turn",
        "cancelled",
    ]
    assert client.said() == "donerejected"
    assert client.asked[0].tool_call_id == "c1" and client.asked[0].raw_input == {"command": "rm x"}
    results = [entry for entry in read_record(script) if entry["dir"] == "result"]
    assert [entry["result"]["outcome"] for entry in results] == [
        {"outcome": "selected", "optionId": "allow"},
        {"outcome": "selected", "optionId": "reject"},
        {"outcome": "cancelled"},
    ]


async def test_permission_offers_the_scripted_or_the_default_options(
    client: Client, script: Path
) -> None:
    options = [{"id": "yes", "name": "Yes", "kind": "allow_always"}]
    steps = [{"permission": {"id": "c1", "options": options}}, {"permission": {"id": "c2"}}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    client.answers = ["yes", "always"]
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    offered = [[(o.option_id, o.kind) for o in options] for options in client.offered]
    assert offered == [
        [("yes", "allow_always")],
        [("allow", "allow_once"), ("always", "allow_always"), ("reject", "reject_once")],
    ]
    [first, second] = [e for e in read_record(script) if e["dir"] == "result"]
    assert first["result"]["outcome"]["optionId"] == "yes"
    assert second["result"]["outcome"]["optionId"] == "always"


async def test_files_are_read_and_written_through_the_client(client: Client, script: Path) -> None:
    """A relative path is made absolute against the session's folder; answers and errors
    alike are recorded."""
    (client.root / "notes.md").write_text("one\ntwo\nthree\n")
    steps = [
        {"read": {"path": "notes.md", "line": 2, "limit": 1}},
        {"write": {"path": "out.txt", "content": "written"}},
        {"read": {"path": "missing.md"}},
    ]
    write_script(script, turns=[{"match": "", "steps": steps}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert (client.root / "out.txt").read_text() == "written"
    answers = [entry for entry in read_record(script) if entry["dir"] in ("result", "error")]
    assert answers == [
        {"dir": "result", "method": "fs/read_text_file", "result": {"content": "two\n"}},
        {"dir": "result", "method": "fs/write_text_file", "result": {}},
        {
            "dir": "error",
            "method": "fs/read_text_file",
            "error": {
                "code": -32002,
                "message": "Resource not found",
                "data": {"uri": str(client.root / "missing.md")},
            },
        },
    ]


async def test_a_terminal_is_created_waited_for_read_and_released(
    client: Client, script: Path
) -> None:
    terminal = {
        "command": "echo",
        "args": ["hi", "$X"],
        "env": [{"name": "X", "value": "1"}],
        "output_byte_limit": 1000,
        "tool_id": "c1",
    }
    steps = [{"tool": {"id": "c1", "title": "echo"}}, {"terminal": terminal}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    answers = [(e["method"], e["result"]) for e in read_record(script) if e["dir"] == "result"]
    assert answers == [
        ("terminal/create", {"terminalId": "term-1"}),
        ("terminal/wait_for_exit", {"exitCode": 0}),
        (
            "terminal/output",
            {"output": "hi 1\n", "truncated": False, "exitStatus": {"exitCode": 0}},
        ),
        ("terminal/release", {}),
    ]
    [embedded] = client.of("tool_call_update")
    assert embedded.content[0].terminal_id == "term-1"
    assert client.terminals == {}


async def test_a_terminal_can_be_killed_without_waiting(client: Client, script: Path) -> None:
    terminal = {"command": "sleep 30", "wait": False, "output": False, "kill": True}
    write_script(script, turns=[{"match": "", "steps": [{"terminal": terminal}]}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    methods = [e["method"] for e in read_record(script) if e["dir"] == "result"]
    assert methods == ["terminal/create", "terminal/kill", "terminal/release"]


async def test_load_replays_the_history_in_a_fresh_process(client: Client, script: Path) -> None:
    """The history is saved under $HOME; a new agent process loading the session replays it
    as user and agent chunks before its answer, in the mode the session was left in."""
    write_script(script, modes=MODES, turns=[{"match": "", "steps": [{"say": "Hi!"}]}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("hello")])
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
    assert client.of("current_mode_update")[0].current_mode_id == "plan"
    fresh = Client(client.root)
    async with agent(fresh, script) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        loaded = await conn.load_session(
            cwd=str(client.root), session_id=session_id, mcp_servers=[]
        )
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(client.root), session_id="nope", mcp_servers=[])
    replay = [(update.session_update, update.content.text) for update in fresh.updates]
    assert replay == [("user_message_chunk", "hello"), ("agent_message_chunk", "Hi!")]
    assert loaded.modes is not None and loaded.modes.current_mode_id == "plan"
    assert unknown.value.code == -32002
    loads = [entry for entry in read_record(script) if entry["method"] == "session/load"]
    assert loads[0]["params"]["sessionId"] == session_id


async def test_a_cancel_ends_a_sleep_or_a_wait_for_it(client: Client, script: Path) -> None:
    turns = [
        {"match": "sleep", "steps": [{"sleep": 30}, {"say": "woke"}]},
        {"match": "wait", "steps": [{"wait_cancel": True}]},
        {"match": "nap", "steps": [{"sleep": 0.05}, {"say": "rested"}]},
    ]
    write_script(script, turns=turns)
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        answers = []
        for word in ("sleep", "wait"):
            turn = asyncio.ensure_future(
                conn.prompt(session_id=session_id, prompt=[text_block(word)])
            )
            await asyncio.sleep(0.2)
            await conn.cancel(session_id=session_id)
            answers.append((await turn).stop_reason)
        napped = await conn.prompt(session_id=session_id, prompt=[text_block("nap")])
    assert answers == ["cancelled", "cancelled"]
    assert napped.stop_reason == "end_turn" and client.said() == "rested"
    cancels = [entry for entry in read_record(script) if entry["method"] == "session/cancel"]
    assert [entry["params"] for entry in cancels] == [{"sessionId": session_id}] * 2


@pytest.mark.parametrize("reason", ["end_turn", "max_tokens", "max_turn_requests", "refusal"])
async def test_the_scripted_stop_reason_and_usage_are_answered(
    client: Client, script: Path, reason: str
) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cached_read_tokens": 2, "total_tokens": 18}
    steps = [{"stop": reason, "usage": usage}, {"say": "never said"}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert answer.stop_reason == reason
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.cached_read_tokens) == (10, 2)
    assert client.said() == ""


async def test_an_invalid_stop_reason_reaches_the_wire(client: Client, script: Path) -> None:
    """The SDK's client refuses it; the raw answer shows it was sent as scripted."""
    write_script(script, turns=[{"match": "", "steps": [{"stop": "bogus"}]}])
    seen: list[dict[str, Any]] = []
    async with agent(client, script, observe=seen) as (conn, _):
        session_id = await start(conn, client)
        with pytest.raises(ValidationError):
            await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert {"stopReason": "bogus"} in [message.get("result") for message in seen]


async def test_an_error_step_answers_the_prompt_with_it(client: Client, script: Path) -> None:
    error = {"code": -32603, "message": "boom", "data": {"why": "scripted"}}
    write_script(script, turns=[{"match": "", "steps": [{"say": "a"}, {"error": error}]}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        with pytest.raises(RequestError) as raised:
            await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    assert (raised.value.code, str(raised.value), raised.value.data) == (
        -32603,
        "boom",
        {"why": "scripted"},
    )


async def test_new_session_can_fail_as_scripted(client: Client, script: Path) -> None:
    write_script(script, new_session={"error": {"code": -32000, "message": "auth required"}})
    async with agent(client, script) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        with pytest.raises(RequestError) as raised:
            await conn.new_session(cwd=str(client.root), mcp_servers=[])
    assert (raised.value.code, str(raised.value)) == (-32000, "auth required")


async def test_an_unknown_update_and_an_unknown_method_reach_the_client(
    client: Client, script: Path
) -> None:
    """Neither is checked against the schema on the way out; the client's method-not-found
    answer is recorded."""
    steps = [
        {"unknown_update": {"sessionUpdate": "notice", "text": "x"}},
        {"call": {"method": "foo/bar", "params": {"a": 1}}},
    ]
    write_script(script, turns=[{"match": "", "steps": steps}])
    seen: list[dict[str, Any]] = []
    async with agent(client, script, observe=seen) as (conn, _):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    assert updates == [{"sessionUpdate": "notice", "text": "x"}]
    assert any(m.get("method") == "foo/bar" and m["params"] == {"a": 1} for m in seen)
    [error] = [entry for entry in read_record(script) if entry["dir"] == "error"]
    assert error["method"] == "foo/bar" and error["error"]["code"] == -32601


async def test_a_crash_exits_with_its_code_mid_turn(client: Client, script: Path) -> None:
    write_script(script, turns=[{"match": "", "steps": [{"say": "bye"}, {"crash": 3}]}])
    async with agent(client, script) as (conn, process):
        session_id = await start(conn, client)
        with pytest.raises(ConnectionError):
            await conn.prompt(session_id=session_id, prompt=[text_block("go")])
        assert await process.wait() == 3
    assert client.said() == "bye"


async def test_initialize_can_crash(client: Client, script: Path) -> None:
    write_script(script, init={"crash": 4})
    async with agent(client, script) as (conn, process):
        with pytest.raises(ConnectionError):
            await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        assert await process.wait() == 4


async def test_initialize_can_write_stderr_first(client: Client, script: Path) -> None:
    write_script(script, init={"stderr": "starting up"})
    async with agent(client, script) as (conn, process):
        init = await conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        assert process.stderr is not None
        assert await process.stderr.readline() == b"starting up\n"
    assert init.protocol_version == 1


async def test_initialize_can_hang(client: Client, script: Path) -> None:
    """The whole process stops answering; only a signal ends it."""
    write_script(script, init={"hang": True})
    async with agent(client, script) as (conn, process):
        initialize = conn.initialize(protocol_version=1, client_capabilities=CAPABILITIES)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(initialize, timeout=0.5)
        assert process.returncode is None
        process.kill()


async def test_stderr_lines_are_written_as_scripted(client: Client, script: Path) -> None:
    steps = [{"stderr": "warning: low fuel", "repeat": 3}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    async with agent(client, script) as (conn, process):
        session_id = await start(conn, client)
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
        assert process.stderr is not None
        lines = [await process.stderr.readline() for _ in range(3)]
    assert lines == [b"warning: low fuel\n"] * 3


async def test_a_hung_turn_ignores_cancel_while_the_agent_still_answers(
    client: Client, script: Path
) -> None:
    """`hang: "turn"` never answers the prompt, cancelled or not; other requests still are."""
    write_script(script, modes=MODES, turns=[{"match": "", "steps": [{"hang": "turn"}]}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("go")]))
        await conn.cancel(session_id=session_id)
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        done, _pending = await asyncio.wait([turn], timeout=0.3)
        assert not done
        turn.cancel()


async def test_raw_lines_go_to_stdout_between_the_messages(script: Path, tmp_path: Path) -> None:
    """Read without the SDK: a garbage line and a huge one, each whole, in their places."""
    steps = [{"say": "before"}, {"raw": "not json"}, {"raw_bytes": 9_000_000}, {"say": "after"}]
    write_script(script, turns=[{"match": "", "steps": steps}])
    process = await asyncio.create_subprocess_exec(
        *agent_command(script),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path)},
        limit=16 << 20,
    )
    assert process.stdin is not None and process.stdout is not None

    def send(id_: int, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        process.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]

    send(0, "initialize", {"protocolVersion": 1})
    send(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
    lines = [await process.stdout.readline() for _ in range(2)]
    session_id = json.loads(lines[1])["result"]["sessionId"]
    send(2, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "x"}]})
    lines = [await process.stdout.readline() for _ in range(5)]
    process.stdin.close()
    assert await process.wait() == 0
    assert lines[1] == b"not json\n"
    assert len(lines[2]) == 9_000_001
    huge = json.loads(lines[2])
    assert huge["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    texts = [json.loads(lines[i])["params"]["update"]["content"]["text"] for i in (0, 3)]
    assert texts == ["before", "after"]
    assert json.loads(lines[4])["result"] == {"stopReason": "end_turn"}


async def test_the_record_holds_every_message_received(client: Client, script: Path) -> None:
    write_script(script, modes=MODES, turns=[{"match": "", "steps": [{"say": "ok"}]}])
    async with agent(client, script) as (conn, _):
        session_id = await start(conn, client)
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        await conn.prompt(session_id=session_id, prompt=[text_block("go")])
        await conn.cancel(session_id=session_id)
        with pytest.raises(RequestError):
            await conn.set_session_mode(session_id=session_id, mode_id="nope")
    received = read_record(script)
    assert [entry["method"] for entry in received] == [
        "initialize",
        "session/new",
        "session/set_mode",
        "session/prompt",
        "session/cancel",
        "session/set_mode",
    ]
    assert all(entry["dir"] == "in" for entry in received)
    assert received[2]["params"] == {"sessionId": session_id, "modeId": "plan"}
