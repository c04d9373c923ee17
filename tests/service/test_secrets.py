"""Secrets: the server's own never leave it, and a command cannot read its environment."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.in_process import in_process
from support.wire import decide, drive

from blitz.agent.sandbox import Isolation, isolation
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w
from blitz_client import AsyncBlitz

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")

KEY = "sk-known-provider-key-0123456789abcdef"


async def test_the_servers_own_key_reaches_neither_a_client_nor_the_model(settings):
    workspace_file = "creds.txt"
    async with in_process(replace(settings, openai_api_key=KEY)) as wire:
        session = await wire.create_session()
        folder = settings.workspace_root / session.workspace
        (folder / workspace_file).write_text(f"leaked = {KEY}\n")
        events = await drive(
            wire,
            session.id,
            f"$ cat {workspace_file}\nread {workspace_file}",
            decide(wire, session.id, t.DECISION_ONCE),
        )
        read = await wire.call(
            "ReadFile", w.ReadFileRequest(session_id=session.id, path=workspace_file)
        )
    assert all(KEY not in str(e) for e in events), "no event carries the key"
    assert "leaked = ***" in events[-1].finished.output, "the model saw it masked too"
    assert read.content == b"leaked = ***\n", "nor does a client reading the workspace"


async def test_a_server_secret_the_model_repeats_is_masked_in_its_text_and_output(settings):
    """The demo model echoes the prompt: `You said: <the key>` is masked wherever it goes."""
    async with in_process(replace(settings, openai_api_key=KEY)) as wire:
        session = await wire.create_session()
        events = await drive(
            wire, session.id, f"the key is {KEY}", decide(wire, session.id, t.DECISION_ONCE)
        )
    texts = [e.text.text for e in events if e.HasField("text")]
    assert texts and all(KEY not in text for text in texts)
    assert "the key is ***" in events[-1].finished.output
    assert all(KEY not in str(e) for e in events)


async def test_ordinary_variables_are_shown_as_they_are(wire):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "$ echo PWD=/srv/app max_tokens=4096 API_TOKEN=abc123xyz789",
        decide(wire, session.id, t.DECISION_ONCE),
    )
    output = "".join(e.tool_output.output for e in events if e.HasField("tool_output"))
    assert output == "PWD=/srv/app max_tokens=4096 API_TOKEN=***\n"


@pytest.mark.skipif(
    isolation() is Isolation.UNCONFINED and os.geteuid() == 0,
    reason="root reads every process's environment; only a namespace keeps it out",
)
async def test_a_command_cannot_read_the_servers_environment(tmp_path: Path):
    marker = "server-only-marker-5f1e2d"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env["SERVER_ONLY"] = marker
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "serve", "--log-format", "json",
        "--grpc-port", "0", "--http-port", "0", "--data-dir", str(tmp_path / "data"),
        env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        async with asyncio.timeout(60):
            while line := json.loads(await proc.stderr.readline()):
                if line["event"] == "serving":
                    break
        snoop = (
            "cat /proc/$PPID/environ /proc/$PPID/cmdline; "
            "for p in /proc/[0-9]*; do cat $p/environ; done; true"
        )
        async with AsyncBlitz(f"127.0.0.1:{line['grpc_port']}") as blitz:
            session = await blitz.create_session()
            seen = []
            async for event in blitz.run(session.id, f"$ {snoop}"):
                seen.append(event)
                if event.HasField("approval_request"):
                    await blitz.decide(session.id, event.approval_request.request_id, "once")
    finally:
        proc.terminate()
        await proc.wait()
    assert seen[-1].HasField("finished")
    assert all(marker not in str(e) for e in seen), "the server's environment stayed its own"
