"""What `blitz serve` says as it starts, or fails to: where the console is, on both log
formats; which flag to change when a port is taken; and none of grpc-core's own lines
(`E1204 … add_port.cc:83] …`) unless asked for with `--log-level debug`.

Each test runs `blitz serve` as a process, as an operator would, and reads its stderr.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

# How grpc-core (absl) begins a line of its own: severity, date, time, thread, file:line.
GRPC_CORE_LINE = re.compile(r"(?m)^[DIWEF]\d{4} [\d:.]+ +\d+ [\w.]+\.cc:\d+\]")


def serve_env(**extra: str) -> dict[str, str]:
    """The server's environment: none of the developer's BLITZ_* or GRPC_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLITZ_", "GRPC_"))}
    env.update(extra)
    return env


def blitz_serve(tmp_path: Path, *flags: str) -> list[str]:
    """`blitz serve FLAGS` on a data folder of its own."""
    return [
        sys.executable, "-m", "blitz.cli", "serve", f"--data-dir={tmp_path / 'data'}",
        "--drain-timeout=2", *flags,
    ]  # fmt: skip


def serve_until(argv: list[str], marker: str, *, env: dict[str, str]) -> str:
    """Run `argv` until `marker` shows in its stderr (then SIGTERM it) or it exits; all
    of its stderr."""
    lines: list[str] = []
    with subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        assert process.stderr is not None
        try:
            for line in process.stderr:
                lines.append(line)
                if marker in line:
                    process.send_signal(signal.SIGTERM)
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
    return "".join(lines)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 another process (this one) listens on."""
    with socket.create_server(("127.0.0.1", 0)) as held:
        yield int(held.getsockname()[1])


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_the_start_up_log_says_where_to_open_the_console(tmp_path: Path, log_format: str):
    err = serve_until(
        blitz_serve(tmp_path, "--grpc-port=0", "--http-port=0", f"--log-format={log_format}"),
        "open the console at",
        env=serve_env(),
    )
    match = re.search(r"open the console at (http://127\.0\.0\.1:(\d+)/)", err)
    assert match, err
    url, port = match.groups()
    if log_format == "json":
        lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
        (serving,) = [line for line in lines if line["event"] == "serving"]
        assert serving["console"] == url and serving["http_port"] == int(port)
        (human,) = [line for line in lines if line.get("event", "").startswith("open the")]
        assert human["event"] == f"open the console at {url}" and human["console"] == url
    else:
        assert f"http_port={port}" in err


@pytest.mark.parametrize("port_flag", ["--grpc-port", "--http-port"])
def test_a_port_in_use_names_its_flag_and_grpc_core_says_nothing(
    tmp_path: Path, taken_port: int, port_flag: str
):
    other = "--http-port" if port_flag == "--grpc-port" else "--grpc-port"
    argv = blitz_serve(tmp_path, f"{port_flag}={taken_port}", f"{other}=0", "--log-format=json")
    ran = subprocess.run(argv, env=serve_env(), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stderr
    assert not GRPC_CORE_LINE.search(ran.stderr), ran.stderr
    (failed,) = [json.loads(line) for line in ran.stderr.splitlines() if "cannot start" in line]
    kind = "gRPC" if port_flag == "--grpc-port" else "HTTP"
    assert failed["error"] == (
        f"cannot listen for {kind} on 127.0.0.1:{taken_port}: Address already in use;"
        f" another process listens there (another `blitz serve`?): choose another port"
        f" with {port_flag}"
    )


@pytest.mark.parametrize(
    ("flags", "env"),
    [(["--log-level=debug"], {}), ([], {"GRPC_VERBOSITY": "ERROR"})],
    ids=["log-level-debug", "users-own-GRPC_VERBOSITY"],
)
def test_grpc_cores_lines_show_at_debug_or_when_the_user_asks_grpc(
    tmp_path: Path, taken_port: int, flags: list[str], env: dict[str, str]
):
    argv = blitz_serve(tmp_path, f"--grpc-port={taken_port}", "--http-port=0", *flags)
    ran = subprocess.run(argv, env=serve_env(**env), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1
    assert "add_port.cc" in ran.stderr
    assert "choose another port with --grpc-port" in ran.stderr
