"""The README's examples run, against a real server, as a newcomer would run them."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from asyncio.subprocess import PIPE

from support.events import kinds
from support.readme import README, block
from support.wire import drive, open_wire

from blitz.config.readme import with_table
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t


async def run(*cmd: str) -> tuple[int, str, str]:
    """Run a command without blocking the event loop the server under test runs on."""
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=PIPE, stderr=PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_python_example_streams_a_turn(server):
    code = block("### Talk to it from Python", "python").replace(
        "127.0.0.1:50051", server.grpc_target
    )
    code, out, err = await run(sys.executable, "-c", code)
    assert code == 0, err
    assert "You said: Hello, agent!" in out
    assert "[1 model calls so far]" in out


async def test_curl_example_creates_a_session(server):
    script = block("### Talk to it with curl", "sh").replace(
        "http://127.0.0.1:8080", server.http_url
    )
    code, out, err = await run("bash", "-c", script)
    assert code == 0, err
    session = json.loads(out)
    assert session["title"] == "from curl"
    assert session["labels"] == {"team": "docs"}
    assert session["state"] == "SESSION_STATE_IDLE"


async def test_demo_example_prompt_does_what_the_table_says(server):
    prompt = block("Example prompt", "")
    wire = open_wire("grpc", server)
    try:
        session = await wire.create_session()

        async def on_request(event: t.TurnEvent) -> None:
            if event.HasField("question"):
                answer = s.AnswerRequest(
                    session_id=session.id, request_id=event.question.request_id, answers=["yes"]
                )
                await wire.call("Answer", answer)
            else:
                await wire.decide(session.id, event, t.DECISION_ONCE)

        events = await drive(wire, session.id, prompt, on_request)
    finally:
        await wire.close()
    seen = set(kinds(events))
    assert {"tasks", "approval_request", "question", "tool_result", "finished"} <= seen
    assert any(e.HasField("text") and e.text.thought for e in events)
    notes = server.settings.workspace_root / session.workspace / "notes.txt"
    assert notes.read_text() == "hello from the agent\n"
    assert "All done." in events[-1].finished.output


def test_configuration_table_lists_every_serve_flag():
    proc = subprocess.run(
        [sys.executable, "-m", "blitz.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    flags = set(re.findall(r"(--[a-z][a-z-]+)", proc.stdout)) - {"--help", "--config"}
    table = README[README.index("## Configuration") : README.index("## Documentation")]
    documented = set(re.findall(r"`(--[a-z][a-z-]+)`", table))
    assert documented == flags
    for variable in re.findall(r"\[(BLITZ_[A-Z_]+)\]", proc.stdout):
        assert f"`{variable}`" in table


def test_the_configuration_table_is_the_one_the_settings_make():
    """The table is generated (`make docs`), so it cannot drift from the code."""
    assert with_table(README) == README, "run `make docs` and commit the README"
