"""Durable runs: a `blitz serve` killed with SIGKILL mid-step, and a parked step answered
from another client.

The run's state is stored with each flow_step, so the restarted server goes on at the step
that was running (retried when its `retry` allows SERVER_RESTARTED, failed with that reason
otherwise) and never runs a finished step again. A retry's wait is stored too (when the
next attempt is due), so a server killed during it waits only what is left of it.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from support.replicas import Replica
from support.wire import follow_until_finished, open_wire, until
from workflows.conftest import write_workflow
from workflows.runs import flows

from blitz.server import running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f
from blitz_client import BlitzError

CRASHY = """\
workflow: crashy
steps:
  - {id: once, type: command, run: "echo ran >> once.log"}
  - id: long
    type: command
    run: "test -f restarted && echo resumed || sleep 120"
    retry: {max_attempts: 2, on: [SERVER_RESTARTED]}
  - {id: after, type: command, run: "cat once.log"}
"""


def _approve(wire, session_id):
    """Approve each approval; one replayed from before the kill was resolved then."""

    async def on_request(event: t.TurnEvent) -> None:
        try:
            await wire.decide(session_id, event, t.DECISION_ONCE)
        except BlitzError as exc:
            assert exc.reason == "ALREADY_RESOLVED", exc

    return on_request


async def _restarted_run(server: Replica, flags, session_id: str, kind: str, *, approving=True):
    """Start the killed server again and follow the run to its end, from the first event
    (approving what it asks, unless not `approving`); the session's events, then the
    server closed."""
    try:
        server.start(*flags)
        wire = open_wire(kind, server)  # type: ignore[arg-type]  # it has both addresses
        try:
            approve = _approve(wire, session_id) if approving else None
            return await follow_until_finished(wire, session_id, 0, approve)
        finally:
            await wire.close()
    finally:
        server.close()


async def _start_and_kill(tmp_path, text: str):
    """A server with the workflow, its run started and killed -9 while `long` runs."""
    data, logs, shared = tmp_path / "data", tmp_path / "logs", tmp_path / "shared"
    logs.mkdir()
    name = text.split("\n", 1)[0].removeprefix("workflow: ")
    write_workflow(shared, name, text)
    server = Replica("solo", database=str(data / "blitz.db"), data_dir=data, logs=logs)
    flags = (f"--workflows-dir={shared}",)
    server.start(*flags)
    wire = open_wire("grpc", server)  # type: ignore[arg-type]  # it has both addresses
    session = await wire.create_session()
    stream = wire.stream("RunWorkflow", f.RunWorkflowRequest(session_id=session.id, name=name))
    approve = _approve(wire, session.id)
    long_approved = False
    async for event in stream:
        if event.HasField("approval_request"):
            await approve(event)
            long_approved = event.step.id == "long"
        if long_approved and event.session_state.state == t.SessionStateChange.STATE_RUNNING:
            break  # the approved sleep runs
    await asyncio.sleep(0.5)
    await stream.aclose()
    await wire.close()
    server.kill()
    (data / "workspaces" / session.workspace / "restarted").write_text("")
    return server, flags, session, data


async def test_a_run_killed_mid_step_resumes_at_that_step_after_restart(tmp_path):
    server, flags, session, data = await _start_and_kill(tmp_path, CRASHY)
    events = await _restarted_run(server, flags, session.id, "connect")
    finished = events[-1].finished
    assert finished.error.reason == "", finished
    # `once` ran once, before the kill; `long` was retried for SERVER_RESTARTED.
    assert finished.output == "ran\n"
    steps = flows(events, waiting=False)
    assert steps.count(("once", "succeeded")) == 1
    assert ("long", "retrying") in steps
    retrying = next(e.flow_step for e in events if e.flow_step.status == "retrying")
    assert retrying.error == "SERVER_RESTARTED"
    assert steps[-1] == ("after", "succeeded")
    assert [e.WhichOneof("kind") for e in events].count("accepted") == 1
    log = (data / "workspaces" / session.workspace / "once.log").read_text()
    assert log == "ran\n"


async def test_a_run_killed_mid_step_without_a_retry_fails_with_server_restarted(tmp_path):
    strict = CRASHY.replace("workflow: crashy", "workflow: strict").replace(
        "    retry: {max_attempts: 2, on: [SERVER_RESTARTED]}\n", ""
    )
    server, flags, session, _ = await _start_and_kill(tmp_path, strict)
    events = await _restarted_run(server, flags, session.id, "grpc", approving=False)
    error = events[-1].finished.error
    assert (error.reason, error.metadata["step"]) == ("SERVER_RESTARTED", "long")
    assert flows(events, waiting=False)[-1] == ("long", "failed")


PATIENT = """\
workflow: patient
steps:
  - id: flaky
    type: command
    run: "date +%s.%N >> tries.log; test -f once || {{ touch once; exit 1; }}"
    retry: {{max_attempts: 2, backoff: {backoff}s, on: [STEP_FAILED]}}
"""


async def _kill_while_retrying(tmp_path, backoff: float, down: float):
    """A server killed -9 just after its run's step failed and began its retry's wait of
    `backoff`, and restarted `down` seconds later; the run's events after the restart, the
    times each attempt ran (wall clock) and the time of the restart."""
    data, logs, shared = tmp_path / "data", tmp_path / "logs", tmp_path / "shared"
    logs.mkdir()
    write_workflow(shared, "patient", PATIENT.format(backoff=backoff))
    server = Replica("solo", database=str(data / "blitz.db"), data_dir=data, logs=logs)
    flags = (f"--workflows-dir={shared}",)
    server.start(*flags)
    try:
        wire = open_wire("grpc", server)  # type: ignore[arg-type]  # it has both addresses
        session = await wire.create_session()
        request = f.RunWorkflowRequest(session_id=session.id, name="patient")
        stream = wire.stream("RunWorkflow", request)
        approve = _approve(wire, session.id)
        async for event in stream:
            if event.HasField("approval_request"):
                await approve(event)
            if event.flow_step.status == "retrying":
                break  # stored with the time its next attempt is due: the wait has begun
        await stream.aclose()
        await wire.close()
        server.kill()
    except BaseException:
        server.close()
        raise
    await asyncio.sleep(down)
    restarted = time.time()
    events = await _restarted_run(server, flags, session.id, "connect")
    log = data / "workspaces" / session.workspace / "tries.log"
    tries = [float(line) for line in log.read_text().split()]
    return events, tries, restarted


async def test_a_run_killed_during_a_retry_wait_waits_only_what_is_left(tmp_path):
    """Killed 3 s into a 12 s wait, the restarted server retries when the wait was due, not
    12 s after it started again (nor at once, nor failed for SERVER_RESTARTED). The wait is
    long beside a restart on a loaded machine, so the two outcomes stay seconds apart."""
    events, tries, restarted = await _kill_while_retrying(tmp_path, backoff=12, down=3)
    assert events[-1].finished.error.reason == "", events[-1].finished
    assert flows(events, waiting=False) == [
        ("flaky", "started"),
        ("flaky", "retrying"),
        ("flaky", "succeeded"),
    ]
    first, second = tries
    assert second - first >= 12  # the whole wait, from before the kill
    assert second - restarted < 12  # and not a wait started over at the restart


async def test_a_run_restarted_after_its_retry_was_due_retries_at_once(tmp_path):
    """Down for longer than the wait, the restarted server retries at once: well within the
    10 s that a wait started over would take, however slow the restart."""
    events, tries, restarted = await _kill_while_retrying(tmp_path, backoff=10, down=11)
    assert events[-1].finished.error.reason == "", events[-1].finished
    assert flows(events, waiting=False)[-1] == ("flaky", "succeeded")
    assert [s for s in flows(events, waiting=False) if s[1] == "retrying"] == [
        ("flaky", "retrying")
    ]
    first, second = tries
    assert second - first >= 11
    assert second - restarted < 10


@pytest.mark.engines("sqlite", "postgres")
async def test_an_approval_inside_a_step_is_answered_from_a_second_client(settings, tmp_path):
    shared = tmp_path / "shared-workflows"
    write_workflow(
        shared, "gate", "workflow: gate\nsteps:\n  - {id: c, type: command, run: 'echo ok'}\n"
    )
    from dataclasses import replace

    async with running_server(replace(settings, workflows_dir=str(shared))) as server:
        first, second = open_wire("grpc", server), open_wire("connect", server)
        try:
            session = await first.create_session()
            stream = first.stream(
                "RunWorkflow", f.RunWorkflowRequest(session_id=session.id, name="gate")
            )
            asked = await until(stream, "approval_request")
            assert asked.step.id == "c"
            await stream.aclose()  # the first client goes away; the run stays parked
            got = await second.call("GetSession", s.GetSessionRequest(session_id=session.id))
            assert got.state == s.SESSION_STATE_PARKED
            await second.decide(session.id, asked, t.DECISION_ONCE)
            events = await follow_until_finished(second, session.id, asked.seq)
        finally:
            await first.close()
            await second.close()
    assert events[-1].finished.output == "ok\n"
    assert flows(events)[-1] == ("c", "succeeded")


async def test_on_two_replicas_the_other_resumes_a_killed_run_once_the_lease_ends(
    replicas, tmp_path
):
    shared = tmp_path / "shared"
    write_workflow(shared, "crashy", CRASHY)
    flags = [f"--workflows-dir={shared}"]
    a, b = replicas("a", "b", extra=flags)
    on_a, on_b = open_wire("grpc", a), open_wire("connect", b)  # type: ignore[arg-type]
    try:
        session = await on_a.create_session()
        request = f.RunWorkflowRequest(session_id=session.id, name="crashy")
        stream = on_a.stream("RunWorkflow", request)
        approve = _approve(on_a, session.id)
        long_approved = False
        async for event in stream:
            if event.HasField("approval_request"):
                await approve(event)
                long_approved = event.step.id == "long"
            if long_approved and event.session_state.state == t.SessionStateChange.STATE_RUNNING:
                break
        await asyncio.sleep(0.5)
        await stream.aclose()
        a.kill()
        workspace = tmp_path / "data" / "workspaces" / session.workspace
        (workspace / "restarted").write_text("")
        async with asyncio.timeout(60):
            events = await follow_until_finished(on_b, session.id, 0, _approve(on_b, session.id))
    finally:
        await on_a.close()
        await on_b.close()
    assert events[-1].finished.error.reason == "", events[-1].finished
    assert events[-1].finished.output == "ran\n"
    steps = flows(events, waiting=False)
    assert steps.count(("once", "succeeded")) == 1
    assert ("long", "retrying") in steps
    assert (workspace / "once.log").read_text() == "ran\n"
