"""`blitz webhooks` as a person and a script call it, against a real server and receiver."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.webhooks import LOOPBACK

from blitz.server import RunningServer, running_server


@pytest.fixture
async def server(settings) -> AsyncIterator[RunningServer]:
    async with running_server(replace(settings, webhook_allow_private=LOOPBACK)) as running:
        yield running


async def blitz(server: RunningServer, *args: str) -> tuple[int, str, str]:
    """Run `blitz webhooks ARGS` against `server`: exit code, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "webhooks", *args, "--server", server.grpc_target,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_create_test_list_deliveries_pause_rotate_and_delete(server):
    with Receiver() as rx:
        code, out, _ = await blitz(server, "create", rx.url, "--description", "pager", "--json")
        assert code == 0
        made = json.loads(out)
        hook, secret = made["webhook"]["id"], made["secret"]
        assert made["webhook"]["events"] == ["approval_request", "question", "finished"]
        code, out, _ = await blitz(server, "test", hook)
        assert code == 0 and "ping" in out and "200" in out
        [ping] = rx.verified(secret)
        assert ping["type"] == "ping"
        code, out, _ = await blitz(server, "list")
        assert code == 0 and hook in out and "pager" in out and "active" in out
        code, out, _ = await blitz(server, "deliveries", hook, "--json")
        [delivery] = [json.loads(line) for line in out.splitlines()]
        assert delivery["type"] == "ping" and delivery["attempts"][0]["status"] == 200
        code, out, _ = await blitz(server, "pause", hook)
        assert (code, out.strip()) == (0, f"{hook} paused")
        code, out, _ = await blitz(server, "resume", hook)
        assert (code, out.strip()) == (0, f"{hook} active")
        code, out, _ = await blitz(server, "rotate", hook, "--overlap", "0")
        assert code == 0 and "whsec_" in out and secret not in out
        code, out, _ = await blitz(server, "delete", hook)
        assert (code, out.strip()) == (0, f"deleted {hook}")
        code, _, err = await blitz(server, "test", hook)
        assert code == 1 and "WEBHOOK_NOT_FOUND" in err


async def test_create_refuses_what_the_server_refuses_and_bad_usage(server):
    code, _, err = await blitz(server, "create", "http://10.0.0.1/hook")
    assert code == 1 and "INVALID_ARGUMENT" in err and "--webhook-allow-private" in err
    code, _, err = await blitz(server, "create", "https://x.invalid/", "--label", "nolabel")
    assert code == 2 and "KEY=VALUE" in err


async def test_a_ping_that_is_not_delivered_exits_1(server):
    with Receiver(lambda _: (503, {}, b"not now")) as rx:
        code, out, _ = await blitz(server, "create", rx.url, "--json")
        hook = json.loads(out)["webhook"]["id"]
        code, out, _ = await blitz(server, "test", hook)
    assert code == 1 and "503" in out and "not now" in out
