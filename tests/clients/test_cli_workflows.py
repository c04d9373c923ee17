"""`blitz workflows list|show`, `blitz run --workflow` with a name no one knows, and
`--workspace` on run and chat."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.cli import blitz
from support.servers import running_server

from blitz_client import AsyncBlitz

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "workflows"


@pytest.fixture
async def flows(settings):
    async with running_server(replace(settings, workflows_dir=str(EXAMPLES))) as server:
        yield server


async def test_workflows_list_and_show_the_servers_own(flows):
    code, out, err = await blitz(flows, "workflows")
    assert code == 0, err
    assert "hello" in out and "every-step" in out and "name?" in out

    code, out, err = await blitz(flows, "workflows", "list", "--json")
    assert code == 0, err
    assert sorted(json.loads(line)["name"] for line in out.splitlines()) == ["every-step", "hello"]

    code, out, err = await blitz(flows, "workflows", "show", "hello")
    assert code == 0, err
    assert "-p name=…" in out and "default 'world'" in out
    assert "1. greet" in out and "2. note" in out and "(command)" in out
    assert "blitz run --workflow hello" in out


async def test_workflows_of_a_session_include_its_workspaces(flows):
    async with AsyncBlitz(flows.grpc_target) as client:
        session = await client.create_session(workspace="team")
    own = Path(flows.settings.workspace_root) / "team" / ".blitz" / "workflows"
    own.mkdir(parents=True)
    (own / "local.yaml").write_text(
        "workflow: local\nsteps:\n  - {id: one, type: command, run: 'echo one'}\n"
    )
    code, out, err = await blitz(flows, "workflows", "--session", session.id, "--json")
    assert code == 0, err
    found = {json.loads(line)["name"]: json.loads(line)["source"] for line in out.splitlines()}
    assert found == {"local": "workspace", "hello": "server", "every-step": "server"}


async def test_an_unknown_workflow_lists_the_known_and_leaves_no_session(flows):
    code, _, err = await blitz(flows, "run", "--workflow", "nope")
    assert code == 1
    assert "no workflow named 'nope'" in err
    assert "known workflows: every-step, hello" in err
    async with AsyncBlitz(flows.grpc_target) as client:
        assert [s async for s in client.sessions()] == [], "no empty session is left behind"

    code, _, err = await blitz(flows, "workflows", "show", "nope")
    assert code == 1 and "known workflows:" in err


async def test_run_takes_a_workspace_and_a_title(flows):
    code, out, err = await blitz(flows, "run", "--workspace", "shared", "--title", "first",
                                 "--approve", "$ echo one > made.txt", "--json")  # fmt: skip
    assert code == 0, err
    session_id = json.loads(out.splitlines()[0])["sessionId"]
    code, out, err = await blitz(flows, "run", "--workspace", "shared", "$ cat made.txt",
                                 "--approve")  # fmt: skip
    assert code == 0 and "one" in out, err
    async with AsyncBlitz(flows.grpc_target) as client:
        session = await client.session(session_id)
    assert (session.workspace, session.title) == ("shared", "first")

    code, _, err = await blitz(flows, "run", "--workspace", "../out", "hi")
    assert code == 1 and "workspace" in err
