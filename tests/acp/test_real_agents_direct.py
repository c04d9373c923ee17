"""The real ACP agents from npm (Claude Code's claude-code-acp, Codex's codex-acp), driven
directly with the ACP Python SDK as their client, against scripted model servers on
127.0.0.1 (support/agent_models.py): no Blitz in between, so these pin down what the
agents themselves do over ACP, the behaviour Blitz's ACP runner is written against.

Each agent runs with HOME in the test's folder and every connection but its model's sent
to a closed port (support/npm_agents.py). The packages are installed once into a cache
that outlives the run; without npm or the registry these tests skip (fail in CI).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from support.agent_models import AnthropicModel, Call, ResponsesModel, Turn
from support.npm_agents import Agents, claude_env, codex_env, installed

pytestmark = [pytest.mark.processes, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def agents() -> Agents:
    return installed()


class Client:
    """A minimal ACP client: records every update and request, answers permission requests
    with the first option of kind `answer` (or holds them until `release` is set, then
    answers cancelled), serves fs/* from disk and terminal/* with real processes."""

    def __init__(self, cwd: Path, answer: str = "allow_once") -> None:
        self.cwd = cwd
        self.answer = answer
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.asked = asyncio.Event()
        self.release: asyncio.Event | None = None
        self._terminals: dict[
            str, tuple[asyncio.subprocess.Process, bytearray, asyncio.Task[None]]
        ] = {}

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def tool_calls(self) -> dict[str, dict[str, Any]]:
        """Each tool call's fields merged over its tool_call and tool_call_update updates."""
        merged: dict[str, dict[str, Any]] = {}
        for u in self.updates:
            if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
                merged.setdefault(u["toolCallId"], {}).update(u)
        return merged

    def text(self) -> str:
        return "".join(
            u["content"].get("text", "")
            for u in self.updates
            if u["sessionUpdate"] == "agent_message_chunk"
        )

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kw: Any):
        self.permissions.append(
            {
                "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
            }
        )
        self.asked.set()
        if self.release is not None:
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        chosen = next(o for o in options if o.kind == self.answer)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))

    async def read_text_file(self, session_id: str, path: str, line=None, limit=None, **kw: Any):
        self.calls.append(("fs/read_text_file", {"path": path, "line": line, "limit": limit}))
        lines = Path(path).read_text().splitlines(keepends=True)  # noqa: ASYNC240 (tiny files)
        start = (line or 1) - 1
        return ReadTextFileResponse(
            content="".join(lines[start : start + limit if limit else None])
        )

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any):
        self.calls.append(("fs/write_text_file", {"path": path, "content": content}))
        Path(path).write_text(content)  # noqa: ASYNC240
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args=None,
        env=None,
        cwd=None,
        output_byte_limit=None,
        **kw: Any,
    ):
        self.calls.append(
            ("terminal/create", {"command": command, "args": args, "cwd": cwd, "env": env})
        )
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd or self.cwd,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        output = bytearray()

        async def pump() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                output.extend(chunk)

        terminal = f"term-{len(self._terminals) + 1}"
        self._terminals[terminal] = (process, output, asyncio.create_task(pump()))
        return CreateTerminalResponse(terminal_id=terminal)

    async def terminal_output(self, session_id: str, terminal_id: str, **kw: Any):
        process, output, _ = self._terminals[terminal_id]
        status = (
            None if process.returncode is None else TerminalExitStatus(exit_code=process.returncode)
        )
        return TerminalOutputResponse(
            output=output.decode(errors="replace"), truncated=False, exit_status=status
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kw: Any):
        process, _, pump = self._terminals[terminal_id]
        await process.wait()
        await pump
        return WaitForTerminalExitResponse(exit_code=process.returncode)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kw: Any):
        process = self._terminals[terminal_id][0]
        if process.returncode is None:
            process.kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kw: Any):
        self.calls.append(("terminal/release", {"terminalId": terminal_id}))
        process, _, pump = self._terminals.pop(terminal_id)
        if process.returncode is None:
            process.kill()
            await process.wait()
        await pump
        return ReleaseTerminalResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        pass


CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


@contextlib.asynccontextmanager
async def connected(
    client: Client, program: Path, env: dict[str, str], cwd: Path, log: Path
) -> AsyncIterator[Any]:
    """The agent started and initialized; its stderr goes to `log` (a pipe nobody reads
    would fill and stall it)."""
    with open(log, "ab") as stderr:  # noqa: ASYNC230
        async with spawn_agent_process(
            client,
            str(program),
            env=env,
            cwd=str(cwd),
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, _process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=CAPABILITIES,
                client_info=Implementation(name="blitz-tests", version="0"),
            )
            yield conn


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    yield home, workspace


async def test_claude_code_reads_runs_through_the_terminal_and_writes_through_fs(
    agents: Agents, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, ws = dirs
    with AnthropicModel() as model:
        model.script(
            Turn(
                text="Reading.",
                calls=[Call("mcp__acp__Read", {"file_path": str(ws / "notes.txt")})],
            ),
            Turn(
                calls=[
                    Call(
                        "mcp__acp__Bash",
                        {"command": "wc -l < notes.txt > count.txt", "timeout": 30000},
                    )
                ]
            ),
            Turn(
                calls=[
                    Call(
                        "mcp__acp__Write",
                        {"file_path": str(ws / "out.txt"), "content": "written\n"},
                    )
                ]
            ),
            Turn(text="All done."),
        )
        client = Client(ws)
        async with connected(
            client, agents.claude, claude_env(home, model.url), ws, tmp_path / "err"
        ) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            result = await conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")])

    assert result.stop_reason == "end_turn"
    assert client.text().endswith("All done.")
    # The read and the write went through the client, the command through its terminal.
    methods = [name for name, _ in client.calls]
    assert methods[0] == "fs/read_text_file"
    create = next(params for name, params in client.calls if name == "terminal/create")
    assert create["command"] == "wc -l < notes.txt > count.txt" and not create["args"]
    assert (
        "fs/write_text_file",
        {"path": str(ws / "out.txt"), "content": "written\n"},
    ) in client.calls
    assert (ws / "count.txt").read_text().strip() == "2"
    assert (ws / "out.txt").read_text() == "written\n"
    # Permission for the command and the write, not for the read.
    asked = [p["toolCall"]["rawInput"] for p in client.permissions]
    assert [i.get("command") or i["file_path"] for i in asked] == [
        "wc -l < notes.txt > count.txt", str(ws / "out.txt"),
    ]  # fmt: skip
    assert {(o["optionId"], o["kind"]) for o in client.permissions[0]["options"]} == {
        ("allow_always", "allow_always"), ("allow", "allow_once"), ("reject", "reject_once"),
    }  # fmt: skip
    calls = client.tool_calls()
    assert [c["kind"] for c in calls.values()] == ["read", "execute", "edit"]
    assert all(c["status"] == "completed" for c in calls.values())
    write = list(calls.values())[2]
    assert write["content"] == [
        {"type": "diff", "path": str(ws / "out.txt"), "newText": "written\n"}
    ]
    # The model saw each tool's result.
    results = [model.tool_results(r) for r in model.conversation[1:]]
    assert "alpha" in str(results[0]) and "Exited with code 0" in str(results[1])
    assert len(model.conversation) == 4 and model.exhausted == 0
    assert (home / ".claude" / "projects").is_dir()


async def test_codex_runs_commands_and_patches_itself(
    agents: Agents, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, ws = dirs
    patch = "*** Begin Patch\n*** Add File: out.txt\n+written\n*** End Patch\n"
    with ResponsesModel() as model:
        model.script(
            Turn(text="Reading.", calls=[Call("exec_command", {"cmd": "cat notes.txt"})]),
            Turn(
                calls=[
                    Call(
                        "exec_command",
                        {
                            "cmd": "wc -l < notes.txt > count.txt",
                            "sandbox_permissions": "require_escalated",
                            "justification": "Write count.txt?",
                        },
                    )
                ]
            ),
            Turn(calls=[Call("apply_patch", patch)]),
            Turn(text="All done."),
        )
        client = Client(ws)
        async with connected(
            client, agents.codex, codex_env(home, model.url), ws, tmp_path / "err"
        ) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            result = await conn.prompt(session_id=session.session_id, prompt=[text_block("Go.")])

    assert result.stop_reason == "end_turn"
    assert client.text() == "Reading.All done."
    # Codex runs and writes itself, though the client offers a terminal and fs.
    assert client.calls == []
    assert (ws / "count.txt").read_text().strip() == "2"
    assert (ws / "out.txt").read_text() == "written\n"
    calls = client.tool_calls()
    assert [(c["kind"], c["status"]) for c in calls.values()] == [
        ("read", "completed"), ("execute", "completed"), ("edit", "completed"),
    ]  # fmt: skip
    assert list(calls.values())[2]["content"] == [
        {"type": "diff", "path": str(ws / "out.txt"), "newText": "written\n"}
    ]
    # The sandboxed read needed no permission; the escalated command and the patch did.
    assert [p["toolCall"]["kind"] for p in client.permissions] == ["execute", "edit"]
    assert {o["optionId"] for o in client.permissions[0]["options"]} == {
        "approved", "approved-execpolicy-amendment", "abort",
    }  # fmt: skip
    assert "usage_update" in client.kinds()
    outputs = [model.tool_results(r)[-1]["output"] for r in model.conversation[1:]]
    assert "alpha\nbeta" in outputs[0] and "exited with code 0" in outputs[1]
    assert "Success" in outputs[2]
    assert model.exhausted == 0


@pytest.mark.parametrize("agent", ["claude", "codex"])
async def test_cancel_with_a_pending_permission_then_load_in_a_fresh_process(
    agent: str, agents: Agents, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, ws = dirs
    if agent == "claude":
        server: Any = AnthropicModel()
        run = Call("mcp__acp__Bash", {"command": "touch never.txt", "timeout": 30000})
    else:
        server = ResponsesModel()
        escalated = {"sandbox_permissions": "require_escalated", "justification": "ok?"}
        run = Call("exec_command", {"cmd": "touch never.txt", **escalated})
    with server as model:
        env = claude_env(home, model.url) if agent == "claude" else codex_env(home, model.url)
        program = agents.claude if agent == "claude" else agents.codex
        model.script(
            Turn(text="Running.", calls=[run]),
            Turn(text="second answer"),
            Turn(text="third answer"),
        )
        client = Client(ws)
        client.release = asyncio.Event()
        async with connected(client, program, env, ws, tmp_path / "err") as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            sid = session.session_id
            turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("first")]))
            await asyncio.wait_for(client.asked.wait(), 60)
            await conn.cancel(session_id=sid)
            # The turn ends cancelled without waiting for the permission's answer.
            result = await asyncio.wait_for(turn, 30)
            client.release.set()
            assert result.stop_reason == "cancelled"
            client.release = None
            second = await conn.prompt(session_id=sid, prompt=[text_block("second")])
            assert second.stop_reason == "end_turn"
        assert not (ws / "never.txt").exists()

        fresh = Client(ws)
        async with connected(fresh, program, env, ws, tmp_path / "err") as conn:
            await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
            replayed = [
                (u["sessionUpdate"], u["content"]["text"])
                for u in fresh.updates
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
                and u["content"].get("text")
            ]
            assert ("user_message_chunk", "first") in replayed
            assert replayed[-2:] == [
                ("user_message_chunk", "second"),
                ("agent_message_chunk", "second answer"),
            ]
            third = await conn.prompt(session_id=sid, prompt=[text_block("third")])
            assert third.stop_reason == "end_turn"
        # The model got the whole history back after the load.
        last = model.conversation[-1].json
        assert "second answer" in str(last) and "third" in str(last)
