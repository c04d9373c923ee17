"""The SDK's workflow calls against a real server, over gRPC and Connect."""

from __future__ import annotations

from dataclasses import replace

import pytest
from workflows.test_examples import EXAMPLES

from blitz.server import running_server
from blitz_client import AsyncBlitz, Blitz, BlitzError


@pytest.mark.parametrize("over", ["grpc", "connect"])
async def test_run_workflow_lists_and_runs_with_turn_options(settings, over):
    async with running_server(replace(settings, workflows_dir=str(EXAMPLES))) as server:
        url = server.grpc_target if over == "grpc" else server.http_url
        async with AsyncBlitz(url) as client:
            session = await client.create_session()
            listed = await client.workflows(session.id)
            assert [w.name for w in listed] == ["every-step", "hello"]
            hello = await client.workflow(session.id, "hello")
            assert hello.definition["steps"][1]["type"] == "command"
            events = []
            async for event in client.run_workflow(
                session.id, "hello", {"name": "SDK"}, timeout=60, max_turns=10
            ):
                events.append(event)
                if event.HasField("approval_request"):
                    await client.decide(session.id, event.approval_request.request_id, "once")
            assert events[-1].finished.output == "greeted SDK\n"
            assert [e.flow_step.status for e in events if e.HasField("flow_step")][
                -1
            ] == "succeeded"
            with pytest.raises(BlitzError) as caught:
                async for _ in client.run_workflow(session.id, "every-step"):
                    pass
            assert (caught.value.reason, caught.value.metadata["field"]) == (
                "INVALID_ARGUMENT",
                "params.issue",
            )


async def test_the_blocking_client_runs_a_workflow(settings):
    async with running_server(replace(settings, workflows_dir=str(EXAMPLES))) as server:
        target = server.grpc_target

        def scripted() -> str:
            with Blitz(target) as client:
                session = client.create_session()
                assert [w.name for w in client.workflows(session.id)] == ["every-step", "hello"]
                output = ""
                for event in client.run_workflow(session.id, "hello", {"name": "sync"}):
                    if event.HasField("approval_request"):
                        client.decide(session.id, event.approval_request.request_id, "once")
                    if event.HasField("finished"):
                        output = event.finished.output
                return output

        import asyncio

        assert await asyncio.to_thread(scripted) == "greeted sync\n"
