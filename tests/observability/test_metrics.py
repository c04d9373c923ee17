"""Metrics: the Prometheus port, and what a turn's life shows on it.

Every test scrapes a real server's metrics port over HTTP. The collectors belong to the
process, so each test compares a scrape with one taken before what it checks.
"""

from __future__ import annotations

import asyncio
import platform
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import httpx
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from support.servers import parked_turn
from support.wire import expect_error, open_wire

from blitz import metrics
from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

OPERATIONS = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(server: RunningServer) -> Samples:
    """Every sample the metrics port shows now, by name and labels."""
    url = f"http://{server.settings.metrics_host}:{server.metrics_port}/metrics"
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a series not shown yet."""
    return samples.get((name, frozenset(labels.items())), 0.0)


class Change:
    """What changed between two scrapes."""

    def __init__(self, before: Samples, after: Samples) -> None:
        self.before, self.after = before, after

    def __call__(self, name: str, **labels: str) -> float:
        return value(self.after, name, **labels) - value(self.before, name, **labels)


async def test_a_turn_that_parks_and_is_approved_shows_in_the_metrics(settings: Settings) -> None:
    async with running_server(replace(settings, metrics_port=0)) as server:
        wire = open_wire("grpc", server)
        try:
            session = await wire.create_session()
            get_session = s.GetSessionRequest(session_id=session.id)
            before = await scrape(server)
            stream = wire.run(session.id, "$ echo metered")
            events = []
            async for event in stream:
                events.append(event)
                if event.HasField("approval_request"):
                    break
            # GetSession waits for the session's lock, which the turn holds while parking.
            await wire.call("GetSession", get_session)
            parked = await scrape(server)
            await wire.decide(session.id, events[-1], t.DECISION_ONCE)
            events += [event async for event in stream]
            # ... and while finishing: its count is in once GetSession answers.
            await wire.call("GetSession", get_session)
            after = await scrape(server)
        finally:
            await wire.close()

    while_parked = Change(before, parked)
    assert while_parked("blitz_turns_parked") == 1
    assert while_parked("blitz_turns_running") == 0
    assert while_parked("blitz_watchers") == 1, "the RunTurn stream follows the session"

    change = Change(before, after)
    assert change("blitz_turns_started_total", kind="main") == 1
    assert change("blitz_turns_finished_total", outcome="ok", reason="none") == 1
    assert change("blitz_turns_parked") == 0
    assert change("blitz_turns_running") == 0
    assert change("blitz_watchers") == 0
    assert ("blitz_agent_steps_waiting", frozenset()) in after, "the gauge is shown"
    assert value(after, "blitz_agent_steps_waiting") == 0, "an idle server has none waiting"
    seen = Counter(event.WhichOneof("kind") for event in events)
    assert {"accepted", "approval_request", "resolution", "tool_result", "finished"} <= set(seen)
    for kind, count in seen.items():
        assert change("blitz_events_appended_total", kind=kind) == count, kind
    assert change("blitz_request_wait_seconds_count", kind="approval", via="decide") == 1
    assert change("blitz_decisions_total", kind="approval", via="decide", decision="once") == 1
    assert change("blitz_tool_call_seconds_count", tool="run_command", outcome="ok") == 1
    assert change("blitz_command_seconds_count", outcome="ok") == 1
    usage = events[-1].finished.after
    assert change("blitz_model_call_seconds_count", model="demo") == usage.calls
    assert change("blitz_model_tokens_total", model="demo", kind="input") == usage.input
    assert change("blitz_model_tokens_total", model="demo", kind="output") == usage.output
    assert change("blitz_model_cost_usd_total", model="demo") == 0
    assert change("blitz_store_write_seconds_count", operation="append_events") >= 1


async def test_a_restarted_server_counts_the_turns_it_finds_parked(settings: Settings) -> None:
    await parked_turn(settings, "$ echo after the restart")
    before = metrics.REGISTRY.get_sample_value("blitz_turns_parked")
    async with running_server(replace(settings, metrics_port=0)) as server:
        assert value(await scrape(server), "blitz_turns_parked") == before + 1


async def test_there_is_no_metrics_port_unless_one_is_set(server: RunningServer) -> None:
    assert server.metrics_port is None
    async with httpx.AsyncClient() as client:
        response = await client.get(server.http_url + "/metrics")
    assert response.status_code == 404, "the metrics are never on the API's port"


def test_every_metric_is_documented_with_its_type() -> None:
    table = re.findall(r"^\| `((?:blitz|grpc)_\w+)` \| (\w+) \|", OPERATIONS, re.M)
    exported = re.findall(
        r"^# TYPE ((?:blitz|grpc)_\w+) (\w+)$", generate_latest(metrics.REGISTRY).decode(), re.M
    )
    assert sorted(table) == sorted(exported)


SESSIONS = "blitz.v1.SessionService"


async def test_every_call_is_counted_by_method_and_code_whichever_wire_it_came_by(
    settings: Settings,
) -> None:
    """gRPC and Connect calls alike, under the names grpc's Prometheus interceptors use."""
    sent = 0
    async with running_server(replace(settings, metrics_port=0)) as server:
        before = await scrape(server)
        for kind in ("grpc", "connect"):
            wire = open_wire(kind, server)
            try:
                session = await wire.create_session()
                missing = s.GetSessionRequest(session_id=session.id[:-6] + "000000")
                await expect_error(
                    wire.call("GetSession", missing), "not_found", "SESSION_NOT_FOUND"
                )
                sent += len(await wire.run_all(session.id, "hello"))
            finally:
                await wire.close()
        after = await scrape(server)

    change = Change(before, after)
    create = {"grpc_type": "unary", "grpc_service": SESSIONS, "grpc_method": "CreateSession"}
    assert change("grpc_server_started_total", **create) == 2
    assert change("grpc_server_msg_received_total", **create) == 2
    assert change("grpc_server_handled_total", **create, grpc_code="OK") == 2
    assert change("grpc_server_msg_sent_total", **create) == 2
    assert change("grpc_server_handling_seconds_count", **create) == 2
    get = {**create, "grpc_method": "GetSession"}
    assert change("grpc_server_handled_total", **get, grpc_code="NotFound") == 2
    assert change("grpc_server_msg_sent_total", **get) == 0
    run = {"grpc_type": "server_stream", "grpc_service": SESSIONS, "grpc_method": "RunTurn"}
    assert change("grpc_server_started_total", **run) == 2
    assert change("grpc_server_handled_total", **run, grpc_code="OK") == 2
    assert change("grpc_server_msg_sent_total", **run) == sent
    assert change("grpc_server_handling_seconds_count", **run) == 2


async def test_the_build_is_named_in_the_metrics(settings: Settings) -> None:
    async with running_server(replace(settings, metrics_port=0)) as server:
        samples = await scrape(server)
    [(labels, one)] = [
        (dict(labels), v) for (name, labels), v in samples.items() if name == "blitz_build_info"
    ]
    assert one == 1
    assert labels["version"] and labels["python"] == platform.python_version()


async def test_the_curl_example_shows_the_turn_gauges(settings: Settings) -> None:
    section = OPERATIONS[OPERATIONS.index("## Metrics") :]
    command = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    assert command, "no sh block in the Metrics section"
    async with running_server(replace(settings, metrics_port=0)) as server:
        script = command.group(1).replace("127.0.0.1:9464", f"127.0.0.1:{server.metrics_port}")
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", script, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    assert "blitz_turns_parked " in out.decode()


async def test_each_hook_run_is_counted_by_event_kind_and_decision(settings: Settings) -> None:
    """A pre_tool hook that blocks a turn's command, then a TestHook of one that fails."""
    async with running_server(replace(settings, metrics_port=0)) as server:
        wire = open_wire("grpc", server)
        try:
            session = await wire.create_session()
            blocking = await wire.call(
                "CreateHook",
                hk.CreateHookRequest(
                    event=hk.HOOK_EVENT_PRE_TOOL,
                    command="cat >/dev/null; echo not here >&2; exit 2",
                ),
            )
            failing = await wire.call(
                "CreateHook",
                hk.CreateHookRequest(event=hk.HOOK_EVENT_TURN_END, command="exit 1"),
            )
            before = await scrape(server)
            events = await wire.run_all(session.id, "$ echo hooked")
            await wire.call("TestHook", hk.TestHookRequest(hook_id=failing.hook.id))
            after = await scrape(server)
        finally:
            await wire.close()

    [denied, *_] = [e.hook for e in events if e.HasField("hook")]
    assert (denied.hook_id, denied.decision) == (blocking.hook.id, t.HOOK_DECISION_DENY)
    change = Change(before, after)
    pre_tool = {"event": "pre_tool", "kind": "command"}
    turn_end = {"event": "turn_end", "kind": "command"}
    assert change("blitz_hook_runs_total", **pre_tool, decision="deny") == 1
    assert change("blitz_hook_run_seconds_count", **pre_tool) == 1
    # The turn's own turn_end run, and the test's.
    assert change("blitz_hook_runs_total", **turn_end, decision="failed") == 2
    assert change("blitz_hook_run_seconds_count", **turn_end) == 2
    assert change("blitz_hook_run_seconds_sum", **turn_end) > 0
