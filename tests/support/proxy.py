"""The replicated Compose setup's proxy, run here: the system's nginx with the repo's config.

`running_proxy` takes docker/proxy/blitz.conf as shipped and swaps in only what Compose
decides and a test cannot have: the replicas' addresses (their service names there, real
`blitz serve` processes on 127.0.0.1 here) and the ports it listens on (free ones). The
result goes inside an `http` block, as the official nginx image includes it, in a main
configuration of the test's own: no daemon, its pid, logs and temporary files in the
test's folder, and an access log of which replica served each call. `why_unavailable()`
says why nginx cannot run here; tests that need it are skipped with one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from support.replicas import Replica
from support.servers import free_port

__all__ = ["CONFIG", "TOKEN", "Call", "Proxy", "running_proxy", "why_unavailable", "wired_to"]

CONFIG = Path(__file__).resolve().parents[2] / "docker" / "proxy" / "blitz.conf"
# The ports the shipped config listens on: the replicas' own, as Compose publishes them.
GRPC_PORT, HTTP_PORT = 50051, 8080
START_TIMEOUT_S = 20
# The bearer token the replicas behind a test's proxy require (the container tests' fixture).
TOKEN = "blz_" + "p" * 43


@cache
def _nginx() -> str | None:
    # /usr/sbin is not on every user's PATH.
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def why_unavailable() -> str:
    """Why nginx cannot be run here; "" when it can."""
    return "" if _nginx() else "nginx is not installed (the system's nginx package)"


@dataclass(frozen=True)
class Call:
    """One line of the proxy's access log: the port it came in on, its HTTP status, and
    the replicas tried, in order (the last one answered)."""

    port: int
    status: int
    upstreams: tuple[str, ...]


@dataclass
class Proxy:
    """A running proxy: addresses as `wire.open_wire` takes them, and its access log."""

    process: subprocess.Popen[bytes]
    grpc_target: str
    http_url: str
    folder: Path

    def calls(self) -> list[Call]:
        log = self.folder / "access.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [
            Call(int(port), int(status), tuple(upstreams.split(", ")))
            for port, status, upstreams in (line.split(" ", 2) for line in lines)
        ]

    @property
    def grpc_port(self) -> int:
        return int(self.grpc_target.rpartition(":")[2])

    @property
    def http_port(self) -> int:
        return int(self.http_url.rpartition(":")[2])

    def error_log(self) -> str:
        log = self.folder / "error.log"
        return log.read_text(errors="replace") if log.exists() else ""


def wired_to(
    config: str, replicas: Mapping[str, Replica], *, grpc_port: int, http_port: int
) -> str:
    """`config` with each `server HOST:PORT` of an upstream pointing at the replica named
    HOST (its gRPC or HTTP address, by PORT), and each `listen PORT` on 127.0.0.1:`*_port`.
    Fails if the config names a replica or port it was not given, or lacks one."""
    named: set[str] = set()

    def upstream(match: re.Match[str]) -> str:
        replica = replicas[match["host"]]
        named.add(match["host"])
        port = int(match["port"])
        if port == GRPC_PORT:
            return f"server {replica.grpc_target}"
        assert port == HTTP_PORT, match[0]
        return f"server {replica.http_url.removeprefix('http://')}"

    config, servers = re.subn(r"\bserver\s+(?P<host>[\w.-]+):(?P<port>\d+)", upstream, config)
    assert named == set(replicas) and servers == 2 * len(replicas), (named, servers)
    ports = {GRPC_PORT: grpc_port, HTTP_PORT: http_port}
    config, listens = re.subn(
        r"\blisten\s+(\d+)\b", lambda m: f"listen 127.0.0.1:{ports[int(m[1])]}", config
    )
    assert listens == len(ports), listens
    return config


def _main_config(folder: Path, http: str) -> str:
    # As root, nginx's workers would run as `nobody`, who cannot reach the test's folder.
    user = "user root root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/error.log info;\n"
        "events { worker_connections 512; }\n"
        "http {\n"
        "    log_format calls '$server_port $status $upstream_addr';\n"
        f"    access_log {folder}/access.log calls;\n"
        + "".join(
            f"    {kind}_temp_path {folder}/{kind}_temp;\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"{http}\n}}\n"
    )


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


@contextlib.contextmanager
def running_proxy(replicas: Mapping[str, Replica], folder: Path) -> Iterator[Proxy]:
    """nginx in front of `replicas` (by service name), until the block ends."""
    nginx = _nginx()
    assert nginx is not None, why_unavailable()
    folder.mkdir(parents=True)
    grpc_port, http_port = free_port(), free_port()
    http = wired_to(CONFIG.read_text(), replicas, grpc_port=grpc_port, http_port=http_port)
    config = folder / "nginx.conf"
    config.write_text(_main_config(folder, http))
    process = subprocess.Popen(
        [nginx, "-c", str(config), "-p", str(folder), "-e", str(folder / "error.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proxy = Proxy(process, f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{http_port}", folder)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (_accepts(grpc_port) and _accepts(http_port)):
            assert process.poll() is None, f"nginx exited:\n{proxy.error_log()}"
            assert time.monotonic() < deadline, f"nginx did not listen:\n{proxy.error_log()}"
            time.sleep(0.05)
        yield proxy
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
