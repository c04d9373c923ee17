"""docs/schedules.md's nightly schedule, copied as a newcomer would: the `blitz schedules
create` line and the Python example run against a real server and make what they say."""

from __future__ import annotations

import asyncio
import re
import sys
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest
from support.wire import open_wire

from blitz.server import RunningServer
from blitz.v1 import schedules_pb2 as sc

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "schedules.md").read_text()


def doc_block(lang: str, after: str) -> str:
    section = DOC[DOC.index(after) :]
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block after {after!r} in docs/schedules.md"
    return match.group(1)


async def run(*cmd: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=PIPE, stderr=PIPE, cwd=ROOT)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def _listed(server: RunningServer) -> list[sc.Schedule]:
    wire = open_wire("grpc", server)
    try:
        listed = await wire.call("ListSchedules", sc.ListSchedulesRequest())
    finally:
        await wire.close()
    return list(listed.schedules)


async def test_the_nightly_command_makes_the_nightly_schedule(server: RunningServer):
    script = doc_block("sh", "## A nightly schedule to copy").replace(
        ".venv/bin/blitz schedules create",
        f"{sys.executable} -m blitz.cli schedules create --server {server.grpc_target}",
    )
    code, out, err = await run("bash", "-c", script)
    assert code == 0, err
    [made] = await _listed(server)
    assert f"schedule {made.id}" in out and "next " in out
    assert (made.cron, made.time_zone, made.title) == ("0 3 * * *", "Europe/Paris", "nightly deps")
    assert made.prompt == "Update the dependencies and run the tests"
    assert made.session.title == "deps {date}"
    assert dict(made.session.labels) == {"team": "infra"}
    assert made.session.workspace == "app"
    assert made.catch_up == sc.CATCH_UP_ONCE
    fire = made.next_fire_time.ToDatetime()
    assert (fire.minute, fire.second) == (0, 0) and fire.hour in (1, 2), "03:00 in Paris"


async def test_the_python_example_makes_it_too(server: RunningServer):
    code = doc_block("python", "## A nightly schedule to copy").replace(
        "127.0.0.1:50051", server.grpc_target
    )
    status, out, err = await run(sys.executable, "-c", code)
    assert status == 0, err
    [made] = await _listed(server)
    schedule_id, when = out.split()
    assert schedule_id == made.id and when.endswith("Z")
    assert made.catch_up == sc.CATCH_UP_ONCE and made.session.title == "deps {date}"
