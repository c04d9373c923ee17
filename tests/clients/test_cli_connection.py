"""What `blitz` says when it cannot reach a server: where it looked for one, which flag
trusts a server's private certificate, and none of grpc-core's own lines
(`I1204 … ssl_transport_security.cc:2563] Handshake failed …`) unless asked for with
`--log-level debug`.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from support.servers import free_port, make_settings

from blitz.server import RunningServer, running_server
from blitz_cli.command import grpc_verbosity

# How grpc-core (absl) begins a line of its own: severity, date, time, thread, file:line.
GRPC_CORE_LINE = re.compile(r"(?m)^[DIWEF]\d{4} [\d:.]+ +\d+ [\w.]+\.cc:\d+\]")


@dataclass
class Ran:
    code: int
    # stderr with rich's line wrapping undone: one space wherever it broke a line.
    err: str
    raw_err: str


async def blitz(*argv: str, **env: str) -> Ran:
    """`blitz ARGV` as a process, with none of the developer's BLITZ_* or GRPC_* settings."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("BLITZ_", "GRPC_"))}
    environ.update(env)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", *argv,
        env=environ, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 60)
    text = err.decode()
    return Ran(process.returncode or 0, " ".join(text.split()), text)


@pytest.mark.parametrize("scheme", ["", "http://"])
async def test_a_refused_connection_asks_whether_blitz_serve_runs_there(scheme: str):
    address = f"{scheme}127.0.0.1:{free_port()}"
    ran = await blitz("run", "--server", address, "hi")
    assert ran.code == 1
    assert "Connection refused" in ran.err
    assert f"(is `blitz serve` running at {address}?)" in ran.err


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A server on both ports over TLS, with a certificate from a CA of the test's own."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(b"".join(pem.bytes() for pem in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(key_file))
    settings = make_settings(tmp_path / "data", tls_cert=str(cert_file), tls_key=str(key_file))
    async with running_server(settings) as running:
        yield running


def tls_urls(server: RunningServer) -> dict[str, str]:
    return {"grpc": f"grpcs://{server.grpc_target}", "connect": server.http_url}


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_server_certificate_from_a_private_ca_hints_at_ca_file(tls_server, kind):
    ran = await blitz("run", "--server", tls_urls(tls_server)[kind], "hi")
    assert ran.code == 1
    assert not GRPC_CORE_LINE.search(ran.raw_err), ran.raw_err
    assert (
        "(the server's certificate is not from an authority this client trusts: give the CA"
        " file that issued it with --ca-file or BLITZ_CA_FILE)"
    ) in ran.err


@pytest.mark.parametrize(
    ("flags", "env"),
    [
        (["--log-level", "debug"], {}),
        ([], {"BLITZ_LOG_LEVEL": "debug"}),
        ([], {"GRPC_VERBOSITY": "INFO"}),
    ],
    ids=["flag", "BLITZ_LOG_LEVEL", "users-own-GRPC_VERBOSITY"],
)
async def test_grpc_cores_lines_show_at_debug_or_when_the_user_asks_grpc(
    tls_server, flags: list[str], env: dict[str, str]
):
    ran = await blitz("run", "--server", tls_urls(tls_server)["grpc"], *flags, "hi", **env)
    assert ran.code == 1
    assert "ssl_transport_security.cc" in ran.raw_err


@pytest.mark.parametrize(
    ("level", "before", "after"),
    [
        ("info", None, "NONE"),
        ("error", None, "NONE"),
        ("debug", None, "DEBUG"),
        ("info", "ERROR", "ERROR"),
        ("debug", "NONE", "NONE"),
    ],
)
def test_grpc_verbosity_follows_the_log_level_unless_the_user_set_it(
    level: str, before: str | None, after: str
):
    environ = {} if before is None else {"GRPC_VERBOSITY": before}
    grpc_verbosity(level, environ)
    assert environ == {"GRPC_VERBOSITY": after}
