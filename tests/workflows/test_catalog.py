"""ListWorkflows and GetWorkflow: what a session can run, from its workspace and the server."""

from __future__ import annotations

import pytest
from support.wire import expect_error
from workflows.conftest import session_folder, write_workflow

from blitz.v1 import workflow_pb2 as f

pytestmark = [pytest.mark.engines("sqlite", "postgres"), pytest.mark.parity]

SHARED = """\
workflow: review
version: "3"
title: Review the change
params:
  depth: {type: enum, values: [quick, deep], default: quick, description: how closely}
steps:
  - {id: look, title: Look, type: prompt, prompt: "Review ${{ params.depth }}"}
"""


async def test_list_shows_both_folders_and_broken_files_with_their_error(
    wire, settings, shared_dir
):
    write_workflow(shared_dir, "review", SHARED)
    session = await wire.create_session()
    own = session_folder(settings, session.workspace)
    write_workflow(own, "mine", "workflow: mine\nsteps:\n  - {id: a, type: command, run: 'true'}\n")
    write_workflow(own, "broken", "workflow: broken\nsteps:\n  - {id: a, type: teleport}\n")

    listed = await wire.call("ListWorkflows", f.ListWorkflowsRequest(session_id=session.id))

    by_name = {w.name: w for w in listed.workflows}
    assert list(by_name) == ["broken", "mine", "review"]
    review = by_name["review"]
    assert (review.source, review.path, review.version, review.title) == (
        "server",
        "review.yaml",
        "3",
        "Review the change",
    )
    assert [(p.name, p.type, p.default, p.has_default, list(p.values)) for p in review.params] == [
        ("depth", "enum", "quick", True, ["quick", "deep"])
    ]
    assert [(s.id, s.title, s.type) for s in review.steps] == [("look", "Look", "prompt")]
    assert by_name["mine"].source == "workspace"
    broken = by_name["broken"].error
    assert broken.reason == "INVALID_ARGUMENT"
    assert dict(broken.metadata) == {
        "file": ".blitz/workflows/broken.yaml",
        "field": "steps[0]",
        "line": "3",
    }


async def test_a_workspace_file_wins_over_the_servers_of_the_same_name(wire, settings, shared_dir):
    write_workflow(shared_dir, "review", SHARED)
    session = await wire.create_session()
    write_workflow(
        session_folder(settings, session.workspace), "review", SHARED.replace('"3"', '"9"')
    )
    got = await wire.call("GetWorkflow", f.GetWorkflowRequest(session_id=session.id, name="review"))
    assert (got.source, got.version) == ("workspace", "9")
    assert got.definition["steps"][0]["prompt"] == "Review ${{ params.depth }}"


async def test_get_refuses_a_broken_or_unknown_workflow(wire, settings):
    session = await wire.create_session()
    write_workflow(
        session_folder(settings, session.workspace), "broken", "workflow: broken\nsteps: []\n"
    )
    error = await expect_error(
        wire.call("GetWorkflow", f.GetWorkflowRequest(session_id=session.id, name="broken")),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["file"] == ".blitz/workflows/broken.yaml"
    assert error.metadata["field"] == "steps"
    await expect_error(
        wire.call("GetWorkflow", f.GetWorkflowRequest(session_id=session.id, name="nothing")),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )


async def test_a_link_out_of_the_workspace_is_not_followed(wire, settings, tmp_path):
    outside = tmp_path / "outside"
    write_workflow(
        outside, "evil", "workflow: evil\nsteps:\n  - {id: a, type: command, run: 'true'}\n"
    )
    session = await wire.create_session()
    folder = session_folder(settings, session.workspace)
    folder.parent.mkdir(parents=True)
    folder.symlink_to(outside)
    listed = await wire.call("ListWorkflows", f.ListWorkflowsRequest(session_id=session.id))
    assert [w.name for w in listed.workflows] == []
