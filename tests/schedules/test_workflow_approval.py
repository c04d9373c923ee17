"""A scheduled workflow whose command step asks for approval: the turn parks like any other,
a webhook announces the request with its links, and a link's POST answers it; the run then
goes on to its end. A real server with tokens and a public URL, a real receiver."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx
from google.protobuf.field_mask_pb2 import FieldMask
from support.links import ALICE, ASKS, PUBLIC, path_of
from support.receiver import Receiver
from support.schedules import create, every, finished, fired
from support.webhooks import LOOPBACK
from support.webhooks import create as create_webhook
from support.wire import open_wire

from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s

NIGHTLY = """\
workflow: nightly
params:
  target: {type: string, default: deps}
steps:
  - {id: bump, title: Bump, type: command, run: "echo bumped ${{ params.target }} > bumped.txt"}
  - {id: report, title: Report, type: prompt, prompt: "done: ${{ steps.bump.output }}"}
"""


async def test_a_scheduled_workflows_approval_is_answered_from_a_webhooks_link(
    settings: Settings, tmp_path: Path
):
    shared = tmp_path / "workflows"
    shared.mkdir()
    (shared / "nightly.yaml").write_text(NIGHTLY)
    linked = replace(
        settings,
        workflows_dir=str(shared),
        webhook_allow_private=LOOPBACK,
        public_url=PUBLIC,
        tokens="alice:alice-token-1234",
    )
    async with running_server(linked) as server:
        alice = open_wire("connect", server, ALICE)
        try:
            with Receiver() as receiver:
                await create_webhook(alice, receiver.url, ASKS)
                made = await create(
                    alice,
                    title="nightly bump",
                    every=every(1),
                    workflow=sc.ScheduledWorkflow(name="nightly", params={"target": "tools"}),
                    session=sc.SessionTemplate(labels={"kind": "nightly"}),
                )
                [firing, *_] = await fired(alice, made.id)
                await alice.call(
                    "UpdateSchedule",
                    sc.UpdateScheduleRequest(
                        schedule=sc.Schedule(id=made.id, state=sc.SCHEDULE_STATE_PAUSED),
                        update_mask=FieldMask(paths=["state"]),
                    ),
                )
                assert firing.error == "" and firing.turn_id
                deliveries = await receiver.wait_for(
                    lambda got: any(
                        r.payload()["data"]["session_id"] == firing.session_id for r in got
                    )
                )
                [payload] = [
                    r.payload()
                    for r in deliveries
                    if r.payload()["data"]["session_id"] == firing.session_id
                ]
                assert payload["type"] == "approval_request"
                assert "echo bumped tools" in str(payload["data"])
                [approve] = [x for x in payload["data"]["links"] if x["label"] == "Approve once"]
                async with httpx.AsyncClient(base_url=server.http_url) as web:
                    sent = await web.post(path_of(approve["url"]))
                assert sent.status_code == 200
                assert "Approved once — by link as alice" in sent.text
            turn = await finished(alice, firing)
            assert turn.state == s.TURN_STATE_FINISHED
            assert not turn.HasField("error"), turn.error
            session = await alice.call(
                "GetSession", s.GetSessionRequest(session_id=firing.session_id)
            )
            assert session.owner == "alice", "the turn ran as the schedule's owner"
            assert dict(session.labels) == {"kind": "nightly", "schedule_id": made.id}
            folder = linked.workspace_root / session.workspace
            assert (folder / "bumped.txt").read_text() == "bumped tools\n"
        finally:
            await alice.close()
