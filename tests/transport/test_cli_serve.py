"""The `blitz` command: flags, exit codes, and `blitz serve` as a process under SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest

from blitz.cli import main
from blitz.v1 import session_pb2 as s
from blitz.v1.session_connect import SessionServiceClient
from blitz.v1.session_pb2_grpc import SessionServiceStub


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("blitz ")


def test_a_bad_setting_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLITZ_GRPC_PORT", "not-a-port")
    with pytest.raises(SystemExit) as exited:
        main(["serve"])

    assert exited.value.code == 2
    assert "BLITZ_GRPC_PORT: must be a whole number, got 'not-a-port'" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


@dataclass
class Served:
    process: asyncio.subprocess.Process
    grpc_target: str
    http_url: str
    lines: list[dict[str, object]]


@asynccontextmanager
async def blitz_serve(argv: list[str], tmp_path: Path) -> AsyncIterator[Served]:
    """Start a `blitz serve` process on free ports; yield once it says it is serving."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    process = await asyncio.create_subprocess_exec(
        *argv,
        "--grpc-port=0",
        "--http-port=0",
        f"--data-dir={tmp_path / 'data'}",
        "--log-format=json",
        "--drain-timeout=5",
        cwd=tmp_path,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    lines: list[dict[str, object]] = []
    try:
        async with asyncio.timeout(30):
            while True:
                raw = await process.stderr.readline()
                assert raw, f"blitz serve exited early: {lines}"
                lines.append(json.loads(raw))
                if lines[-1]["event"] == "serving":
                    break
        serving = lines[-1]
        yield Served(
            process,
            f"127.0.0.1:{serving['grpc_port']}",
            f"http://127.0.0.1:{serving['http_port']}",
            lines,
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def stop(served: Served) -> int:
    """SIGTERM; the exit code, once the process has exited (within a few seconds)."""
    assert served.process.stderr is not None
    served.process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(10):
        rest = await served.process.stderr.read()
        code = await served.process.wait()
    served.lines.extend(json.loads(line) for line in rest.splitlines() if line.strip())
    return code


async def test_serve_answers_on_both_ports_and_exits_0_on_sigterm(tmp_path: Path) -> None:
    """`blitz serve` as the console script runs it: real store, core and demo agent."""
    async with blitz_serve([sys.executable, "-m", "blitz.cli", "serve"], tmp_path) as served:
        async with grpc.aio.insecure_channel(served.grpc_target) as channel:
            by_grpc = await SessionServiceStub(channel).CreateSession(
                s.CreateSessionRequest(title="grpc")
            )
        async with SessionServiceClient(served.http_url) as client:
            by_connect = await client.create_session(s.CreateSessionRequest(title="connect"))
            listed = await client.list_sessions(s.ListSessionsRequest())
        async with httpx.AsyncClient() as http:
            health = await http.get(served.http_url + "/healthz")

        code = await stop(served)

    assert (by_grpc.title, by_connect.title, health.text) == ("grpc", "connect", "ok\n")
    assert [x.title for x in listed.sessions] == ["connect", "grpc"]
    assert code == 0
    assert (tmp_path / "data" / "blitz.db").exists()
    events = [line["event"] for line in served.lines]
    assert {"shutting down", "draining", "ports closed"} <= set(events)
    assert events[-1] == "stopped"
