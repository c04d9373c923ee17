"""Tokens are on by default as soon as a server can be reached from elsewhere."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from support.servers import make_settings
from support.wire import expect_error, open_wire

from blitz.auth import ServeRefused, requires_tokens
from blitz.server import running_server
from blitz.v1 import session_pb2 as s


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_alone_needs_no_token(host):
    assert not requires_tokens(hosts=[host, "127.0.0.1"], tokens_configured=False, insecure=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "blitz.example.com"])
def test_beyond_loopback_without_tokens_is_refused_unless_insecure(host):
    with pytest.raises(ServeRefused, match="--insecure"):
        requires_tokens(hosts=["127.0.0.1", host], tokens_configured=False, insecure=False)
    assert not requires_tokens(hosts=[host], tokens_configured=False, insecure=True)
    assert requires_tokens(hosts=[host], tokens_configured=True, insecure=False)


async def test_a_server_with_tokens_requires_one_even_on_loopback(tmp_path):
    settings = make_settings(tmp_path / "data", tokens="alice:a-token-of-alice")
    async with running_server(settings) as server:
        wire = open_wire("grpc", server)
        try:
            await expect_error(
                wire.call("ListSessions", s.ListSessionsRequest()),
                "unauthenticated",
                "UNAUTHENTICATED",
            )
        finally:
            await wire.close()


async def test_a_server_on_all_interfaces_without_tokens_does_not_start(tmp_path):
    settings = make_settings(tmp_path / "data", grpc_host="0.0.0.0")
    with pytest.raises(ServeRefused, match=r"0\.0\.0\.0"):
        async with running_server(settings):
            pass


async def run_serve(tmp_path: Path, *flags: str) -> tuple[int | None, list[dict[str, object]]]:
    """`blitz serve` with `flags` until it serves (then SIGTERM) or exits; its code and log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "serve", "--log-format", "json",
        "--grpc-port", "0", "--http-port", "0", "--data-dir", str(tmp_path / "data"), *flags,
        env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    lines: list[dict[str, object]] = []
    async with asyncio.timeout(60):
        while raw := await proc.stderr.readline():
            lines.append(json.loads(raw))
            if lines[-1]["event"] == "serving":
                proc.terminate()
        code = await proc.wait()
    return (None if any(x["event"] == "serving" for x in lines) else code), lines


async def test_blitz_serve_beyond_loopback_refuses_then_serves_with_insecure_loudly(tmp_path):
    code, lines = await run_serve(tmp_path, "--http-host", "0.0.0.0")
    assert code == 2
    (refusal,) = [x for x in lines if x["event"] == "refusing to start"]
    assert "blitz token create" in str(refusal["reason"])

    code, lines = await run_serve(tmp_path, "--http-host", "0.0.0.0", "--insecure")
    assert code is None, "it served"
    (warning,) = [x for x in lines if str(x["event"]).startswith("INSECURE")]
    assert warning["level"] == "warning" and warning["hosts"] == ["0.0.0.0"]
