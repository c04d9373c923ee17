"""`blitz schedules` as a person and a script call it, against a real server."""

from __future__ import annotations

import asyncio
import json
import sys

from blitz.server import RunningServer


async def blitz(server: RunningServer, *args: str) -> tuple[int, str, str]:
    """Run `blitz schedules ARGS` against `server`: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "schedules", *args, "--server", server.grpc_target,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_create_list_show_run_firings_pause_resume_and_delete(server):
    code, out, err = await blitz(
        server, "create", "--cron", "0 3 * * *", "--time-zone", "Europe/Paris",
        "--prompt", "bump the dependencies", "--title", "nightly", "--label", "team=infra",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    made = json.loads(out)
    sid = made["id"]
    assert made["cron"] == "0 3 * * *" and made["session"]["labels"] == {"team": "infra"}
    code, out, _ = await blitz(server, "list")
    assert code == 0 and sid in out and "active" in out
    code, out, _ = await blitz(server, "run", sid)
    assert code == 0 and "run_now" in out and "blitz watch s_" in out
    code, out, _ = await blitz(server, "firings", sid, "--json")
    [firing] = [json.loads(line) for line in out.splitlines()]
    assert firing["via"] == "run_now" and firing["turnId"]
    code, out, _ = await blitz(server, "show", sid)
    assert code == 0 and "cron 0 3 * * * (Europe/Paris)" in out and "run_now" in out
    code, out, _ = await blitz(server, "pause", sid)
    assert (code, out.strip()) == (0, f"{sid} paused")
    code, out, _ = await blitz(server, "resume", sid)
    assert (code, out.strip()) == (0, f"{sid} active")
    code, out, _ = await blitz(server, "delete", sid)
    assert (code, out.strip()) == (0, f"deleted {sid}")
    code, _, err = await blitz(server, "show", sid)
    assert code == 1 and "SCHEDULE_NOT_FOUND" in err


async def test_create_refuses_what_the_server_refuses_and_bad_usage(server):
    code, _, err = await blitz(server, "create", "--cron", "0 3 * *", "--prompt", "x")
    assert code == 1 and "INVALID_ARGUMENT" in err and "schedule.cron" in err
    code, _, err = await blitz(server, "create", "--every", "soon", "--prompt", "x")
    assert code == 2 and "not an interval" in err
    code, _, err = await blitz(server, "create", "--every", "1h", "--workflow", "w", "-p", "x")
    assert code == 2 and "KEY=VALUE" in err
    code, _, err = await blitz(server, "create", "--every", "1h")
    assert code == 2
