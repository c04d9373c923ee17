"""`--agent` of `blitz chat` and `blitz run`, and the agent in `blitz sessions`: against a
real server that declares one ACP agent (docs/agents.md). No ACP turn runs here (the
agent's process starts at a session's first turn, tests/acp has those): these check that
the name reaches CreateSession and that what the server answers is shown."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.servers import running_server

from blitz.config import Settings
from blitz.config.agents import DeclaredAgent


@pytest.fixture
async def agent_server(settings: Settings, tmp_path: Path):
    """A server with the ACP agent `stub` declared (its process is never started here)."""
    stub = tmp_path / "stub-agent"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    declared = DeclaredAgent(name="stub", command=str(stub), display_name="Stub")
    async with running_server(replace(settings, agents=(declared,))) as server:
        yield server


async def blitz(server, *args: str) -> tuple[int, str, str]:
    """`blitz ARGS` against `server`: exit code, stdout, stderr (as test_cli_commands.py)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", *args, "--server", server.grpc_target, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def chat_until_eof(server, *args: str) -> tuple[int, str]:
    """`blitz chat ARGS` with nothing on stdin: it makes its session, prints its header and
    leaves at the end of its input. The exit code and what it printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "chat", *args, "--server", server.grpc_target,
        env={k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_run_with_an_unknown_agent_names_the_field_and_what_it_takes(agent_server):
    code, out, err = await blitz(agent_server, "run", "hi", "--agent", "nobody")
    assert code == 1 and out == ""
    assert "INVALID_ARGUMENT" in err and "nobody" in err
    assert "agent takes: blitz, stub" in err


async def test_run_with_agent_blitz_is_the_built_in_agent(agent_server):
    code, out, err = await blitz(agent_server, "run", "hello", "--agent", "blitz", "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert "finished" in events[-1] and "error" not in events[-1]["finished"]
    code, out, _ = await blitz(agent_server, "sessions", "--json")
    assert [json.loads(line)["agent"] for line in out.splitlines()] == ["blitz"]


async def test_an_acp_agent_takes_no_model(agent_server):
    code, _, err = await blitz(agent_server, "run", "hi", "--agent", "stub", "--model", "demo")
    assert code == 1
    assert "INVALID_ARGUMENT" in err and "stub" in err


async def test_chat_names_its_agent_and_sessions_show_it(agent_server):
    code, out = await chat_until_eof(agent_server, "--agent", "stub", "--title", "acp")
    assert code == 0, out
    assert "· agent stub ·" in out
    code, out, _ = await blitz(agent_server, "sessions", "--json")
    (made,) = map(json.loads, out.splitlines())
    assert (made["agent"], made["model"]) == ("stub", "acp:stub")
    code, out = await chat_until_eof(agent_server, "--agent", "blitz")
    assert code == 0, out
    assert "· model demo ·" in out and "agent" not in out.splitlines()[0]

    code, out, _ = await blitz(agent_server, "sessions")
    assert code == 0
    header = next(line for line in out.splitlines() if "title" in line)
    assert header.index("agent") < header.index("model")
    row = next(line for line in out.splitlines() if made["id"] in line)
    assert "│ stub " in row and "acp:stub" in row
    code, out, _ = await blitz(agent_server, "sessions", "show", made["id"])
    assert code == 0
    assert "agent stub · idle" in out


async def test_chat_with_an_unknown_agent_says_what_it_takes(agent_server):
    code, out = await chat_until_eof(agent_server, "--agent", "nobody")
    assert code == 1
    assert "INVALID_ARGUMENT" in out and "agent takes: blitz, stub" in out


async def test_sessions_list_has_no_agent_column_without_acp_sessions(server):
    code, out = await chat_until_eof(server, "--title", "plain")
    assert code == 0, out
    code, out, _ = await blitz(server, "sessions")
    header = next(line for line in out.splitlines() if "title" in line)
    assert "agent" not in header and "model" in header
