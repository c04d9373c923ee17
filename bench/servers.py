"""The processes a benchmark measures: Blitz as `blitz serve`, the bare servers, and the
floor (`bench/floor_server.py`).

Each server runs in a process of its own on 127.0.0.1, started and stopped as an
`async with`, and is read from outside: its pid for /proc, its ports for clients. Blitz
gets a temporary data folder, warning-level logs (kept in a file there, shown if it fails
to start) and nothing else that a user would not give it, so what is measured is the
server as it ships. This module must never import the server's own modules.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ROOT",
    "BareServer",
    "BlitzServer",
    "FloorServer",
    "bare_server",
    "blitz_server",
    "floor_server",
    "grpc_options",
    "healthz",
]

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"

# How long a server may take to answer before the harness gives up on it.
_START_TIMEOUT_S = 60.0
# How often readiness is polled: the `start` scenario's resolution.
_POLL_S = 0.005
# Seconds a stopping server may drain; parked turns are data and need none of it.
_DRAIN_TIMEOUT = "2"


def grpc_options(*, own_connection: bool = True) -> list[tuple[str, int]]:
    """Options of the harness's grpc.aio channels: a whole turn's output fits in a message,
    and each channel is a connection of its own (grpcio shares one between channels of the
    same target and options otherwise)."""
    return [
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        ("grpc.use_local_subchannel_pool", 1 if own_connection else 0),
    ]


@dataclass(frozen=True)
class BlitzServer:
    """A running `blitz serve`."""

    pid: int
    grpc_port: int
    http_port: int
    data_dir: Path
    started_in: float
    """Seconds from spawning the process to its first `/healthz` 200."""

    @property
    def grpc_target(self) -> str:
        return f"{HOST}:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"http://{HOST}:{self.http_port}"


@dataclass(frozen=True)
class BareServer:
    """A running `bare_server.py` of one stack ("grpc" or "connect")."""

    pid: int
    kind: str
    port: int

    @property
    def grpc_target(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def http_url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


async def healthz(port: int, *, within: float = 5.0) -> int:
    """The HTTP status of `GET /healthz` on a fresh connection (a raw request, no client)."""
    request = f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n"
    async with asyncio.timeout(within):
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(request.encode())
            status_line = await reader.readline()
        finally:
            writer.close()
            await writer.wait_closed()
    return int(status_line.split()[1])


async def _answers_http(port: int) -> bool:
    try:
        return await healthz(port, within=1.0) == 200
    except (OSError, TimeoutError, IndexError, ValueError):
        return False


async def _accepts(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(HOST, port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            async with asyncio.timeout(30):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _wait_until(
    ready: Callable[[], Awaitable[bool]], proc: asyncio.subprocess.Process, what: str
) -> None:
    """Poll `ready` until it says yes; fail if the process exits or takes too long."""
    end = time.perf_counter() + _START_TIMEOUT_S
    while not await ready():
        if proc.returncode is not None or time.perf_counter() > end:
            raise RuntimeError(f"{what} did not start (exit status {proc.returncode})")
        await asyncio.sleep(_POLL_S)


def _profiler() -> list[str]:
    """`-m pyinstrument …` when BLITZ_BENCH_PROFILE names a folder: each Blitz server then
    runs under pyinstrument, which writes its report there when the server exits. Its
    figures are then the profiler's too: profile in a run of its own."""
    folder = os.environ.get("BLITZ_BENCH_PROFILE")
    if not folder:
        return []
    Path(folder).mkdir(parents=True, exist_ok=True)
    report = Path(folder) / f"blitz-{os.getpid()}-{time.monotonic_ns()}.txt"
    return ["-m", "pyinstrument", "--renderer", "text", "--show-all", "-o", str(report)]


def _stall_watch() -> dict[str, str]:
    """PYTHONPATH with bench/stalls first when BLITZ_BENCH_STALLS names a folder: each
    Blitz server then writes what held its loop up there (bench/stalls/sitecustomize.py),
    at a cost in CPU: look for stalls in a run of its own."""
    folder = os.environ.get("BLITZ_BENCH_STALLS")
    if not folder:
        return {}
    Path(folder).mkdir(parents=True, exist_ok=True)
    paths = [str(Path(__file__).parent / "stalls"), os.environ.get("PYTHONPATH", "")]
    return {
        "BLITZ_BENCH_STALLS": str(Path(folder).resolve()),
        "PYTHONPATH": os.pathsep.join(filter(None, paths)),
    }


@asynccontextmanager
async def blitz_server(extra_flags: Sequence[str] = ()) -> AsyncIterator[BlitzServer]:
    """`python -m blitz.cli serve` on free ports and a temporary data folder, until exit."""
    grpc_port, http_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory(prefix="blitz-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        log_path = Path(tmp) / "server.log"
        command = [
            sys.executable,
            *_profiler(),
            "-m",
            "blitz.cli",
            "serve",
            "--grpc-port",
            str(grpc_port),
            "--http-port",
            str(http_port),
            "--data-dir",
            str(data_dir),
            "--drain-timeout",
            _DRAIN_TIMEOUT,
            *extra_flags,
        ]
        env = {**os.environ, "BLITZ_LOG_LEVEL": "warning", "BLITZ_LOG_FORMAT": "console"}
        env.update(_stall_watch())
        with log_path.open("wb") as log:
            spawned = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, env=env
            )
            try:
                try:
                    await _wait_until(lambda: _answers_http(http_port), proc, "blitz serve")
                    started_in = time.perf_counter() - spawned
                    await _wait_until(lambda: _accepts(grpc_port), proc, "blitz serve's gRPC port")
                except RuntimeError as exc:
                    tail = await asyncio.to_thread(log_path.read_text, errors="replace")
                    raise RuntimeError(f"{exc}; its log ends:\n{tail[-2000:]}") from None
                yield BlitzServer(proc.pid, grpc_port, http_port, data_dir, started_in)
            finally:
                await _stop(proc)


@dataclass(frozen=True)
class FloorServer:
    """A running `floor_server.py`: the least Blitz's stack does per turn."""

    pid: int
    port: int

    @property
    def grpc_target(self) -> str:
        return f"{HOST}:{self.port}"


@asynccontextmanager
async def floor_server() -> AsyncIterator[FloorServer]:
    """`bench/floor_server.py PORT DB` on a free port and a temporary database, until exit."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="blitz-floor-") as tmp:
        command = [sys.executable, "-m", "bench.floor_server", str(port), f"{tmp}/floor.db"]
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL
        )
        try:
            await _wait_until(lambda: _accepts(port), proc, "the floor server")
            yield FloorServer(proc.pid, port)
        finally:
            await _stop(proc)


@asynccontextmanager
async def bare_server(kind: str, default_count: int = 1) -> AsyncIterator[BareServer]:
    """`bench/bare_server.py KIND PORT DEFAULT_COUNT` in a process of its own, until exit."""
    port = _free_port()
    command = [sys.executable, "-m", "bench.bare_server", kind, str(port), str(default_count)]
    proc = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, stdin=asyncio.subprocess.DEVNULL
    )
    try:
        await _wait_until(lambda: _accepts(port), proc, f"the bare {kind} server")
        yield BareServer(proc.pid, kind, port)
    finally:
        await _stop(proc)
