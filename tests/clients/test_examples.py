"""The examples in clients/examples run, unchanged, against a real server on both transports."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "clients" / "examples"


async def run_example(name: str, url: str) -> str:
    # A subprocess, so the example's blocking client does not stall this test's server.
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / name),
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_quickstart_example(server, transport):
    url = server.grpc_target if transport == "grpc" else server.http_url
    out = await run_example("quickstart.py", url)
    assert "[approving: echo hello from the workspace]" in out
    assert "You said: That was easy." in out
    assert "[2 model calls, $0.0000]" in out


@pytest.mark.parametrize("transport", ["grpc", "connect"])
async def test_two_clients_example(server, transport):
    url = server.grpc_target if transport == "grpc" else server.http_url
    out = await run_example("two_clients.py", url)
    assert "watcher: answering 'tea or coffee?' with 'coffee'" in out
    assert "runner: answer: coffee" in out


def test_every_example_is_tested():
    tested = {"quickstart.py", "two_clients.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested
