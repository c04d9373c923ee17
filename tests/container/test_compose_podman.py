"""compose.replicas.yaml, run by podman-compose: two replicas behind the proxy, one session.

The file is run as shipped (support/podman_compose.py), on the images support/podman_images.py
built: Blitz's own, and stand-ins for `postgres:17` and `nginx:1.28` made from Debian's
packages, since no registry is reachable here. Clients talk to the proxy only, on the
ports the file publishes, over gRPC and Connect; the stand-in nginx logs which replica
answered each call.

Skipped where podman cannot run; with BLITZ_REQUIRE_PODMAN=1 (CI) that fails instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import podman_compose
from support.podman import Endpoints, skip_or_fail
from support.podman_compose import Project, compose_project
from support.podman_images import Unavailable, images
from support.waiting import until_reachable
from support.wire import Wire, decide, drive, open_wire

from blitz.auth.tokens import token_hash
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

pytestmark = [
    pytest.mark.processes,
    # One worker builds the images and runs the containers: two would build at once.
    pytest.mark.xdist_group("podman"),
    pytest.mark.timeout(1800),
]

REPO = Path(__file__).resolve().parents[2]
FILE = "compose.replicas.yaml"
TOKEN = "blz_" + "r" * 43
AUTH = {"authorization": f"Bearer {TOKEN}"}
ONCE = t.DECISION_ONCE
REPLICAS = ("blitz-a", "blitz-b")
# The stand-in nginx's log line: the port a call came in on, its status, the replicas tried.
CALL = re.compile(r"^(\d+) (\d{3}) (.+)$")


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[Project]:
    """compose.replicas.yaml up, with its two secrets, every replica serving."""
    try:
        images()
    except Unavailable as exc:
        skip_or_fail(str(exc))
    if why := podman_compose.why_unavailable():
        skip_or_fail(why)
    secrets = {
        "blitz_tokens": f"ops:sha256-{token_hash(TOKEN)}\n",
        "postgres.env": "POSTGRES_PASSWORD=pw-of-the-test\nPGPASSWORD=pw-of-the-test\n",
    }
    with compose_project(FILE, tmp_path, secrets=secrets) as project:
        for replica in REPLICAS:
            project.container(replica).serving()
        yield project


@contextlib.asynccontextmanager
async def client(endpoints: Endpoints, kind: str) -> AsyncIterator[Wire]:
    wire = open_wire(kind, endpoints, AUTH)  # type: ignore[arg-type]  # has both addresses
    try:
        yield wire
    finally:
        await wire.close()


def outputs(events: list[t.TurnEvent]) -> list[str]:
    """The outputs of the turn's commands; the turn finished without an error."""
    assert events[-1].HasField("finished") and not events[-1].finished.HasField("error")
    results = [e.tool_result.result for e in events if e.HasField("tool_result")]
    return [result["output"] for result in results if "output" in result]


def served(project: Project) -> dict[int, set[str]]:
    """By the proxy's port, the replicas (by service) that answered calls, from its log;
    every call answered 200."""
    addresses = {
        project.container(replica).inspect(
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}"
        ): replica
        for replica in REPLICAS
    }
    by_port: dict[int, set[str]] = {}
    for line in project.container("proxy").logs().splitlines():
        if match := CALL.match(line):
            port, status, tried = int(match[1]), match[2], match[3].split(", ")
            assert status == "200", line
            host = tried[-1].rpartition(":")[0]
            by_port.setdefault(port, set()).add(addresses[host])
    return by_port


async def test_two_replicas_behind_the_proxy_serve_one_session(replicated: Project):
    endpoints = Endpoints(f"{replicated.address}:50051", f"http://{replicated.address}:8080")
    compose: dict[str, Any] = yaml.safe_load((REPO / FILE).read_text())
    for replica in REPLICAS:
        # Hardened and boxed, as the file says.
        container = replicated.container(replica)
        assert container.serving()["commands"] == "box"
        assert container.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
        assert compose["services"][replica]["read_only"] is True

    async with client(endpoints, "grpc") as grpc, client(endpoints, "connect") as connect:
        # The proxy may start before the replicas answer (podman-compose cannot wait for
        # health with podman 4.3).
        session = await until_reachable(lambda: grpc.create_session(title="one session"), within=60)
        prompt = "write note.txt\n```\nwritten through the proxy\n```\n$ cat note.txt"
        first = await drive(grpc, session.id, prompt, decide(grpc, session.id, ONCE))
        assert outputs(first)[-1] == "written through the proxy\n"
        # The same session over Connect: any replica has its workspace (one volume).
        second = await drive(
            connect, session.id, "$ cat note.txt", decide(connect, session.id, ONCE)
        )
        assert outputs(second) == ["written through the proxy\n"]
        for wire in (grpc, connect):
            for _ in range(4):
                got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
                assert got.id == session.id
            watched = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
            assert watched == first + second, "one log, whichever replica answers"

        assert served(replicated) == {50051: set(REPLICAS), 8080: set(REPLICAS)}
        for service, spec in compose["services"].items():
            if "healthcheck" in spec:
                assert replicated.container(service).healthcheck() == 0, service

        # A replica stopped as `docker compose stop` does: it drains, and the other serves
        # the session alone.
        stopped = replicated.container("blitz-a")
        await asyncio.to_thread(replicated.compose, "stop", "blitz-a")
        assert await asyncio.to_thread(stopped.exited) == 0
        assert stopped.events()[-1] == "stopped"
        async with asyncio.timeout(120):
            third = await drive(grpc, session.id, "$ cat note.txt", decide(grpc, session.id, ONCE))
        assert outputs(third) == ["written through the proxy\n"]
