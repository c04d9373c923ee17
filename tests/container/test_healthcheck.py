"""The image's health probe finds the HTTP port as the server does, and says what it saw."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import ModuleType

import pytest
import trustme
from support.servers import free_port, make_settings

from blitz.server import running_server

PROBE = Path(__file__).resolve().parents[2] / "docker" / "healthcheck.py"


@pytest.fixture(autouse=True)
def no_settings_from_here(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BLITZ_HTTP_HOST", "BLITZ_HTTP_PORT", "BLITZ_TLS_CERT", "BLITZ_CONFIG"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({}, "http://127.0.0.1:8080/healthz"),
        (
            {"BLITZ_HTTP_HOST": "0.0.0.0", "BLITZ_HTTP_PORT": "9000"},
            "http://127.0.0.1:9000/healthz",
        ),
        ({"BLITZ_HTTP_HOST": "::"}, "http://[::1]:8080/healthz"),
        ({"BLITZ_HTTP_HOST": "10.0.0.7"}, "http://10.0.0.7:8080/healthz"),
        ({"BLITZ_TLS_CERT": "/certs/tls.crt"}, "https://127.0.0.1:8080/healthz"),
    ],
)
def test_the_probe_reads_the_variables_the_server_reads(probe, monkeypatch, env, url):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert probe.healthz_url() == url


def test_the_probe_reads_the_config_file_where_no_variable_says(
    probe: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    config = tmp_path / "blitz.toml"
    config.write_text('http_port = 9001\ntls_cert = "/certs/tls.crt"\n')
    monkeypatch.setenv("BLITZ_CONFIG", str(config))
    assert probe.healthz_url() == "https://127.0.0.1:9001/healthz"
    monkeypatch.setenv("BLITZ_HTTP_PORT", "9002")
    assert probe.healthz_url() == "https://127.0.0.1:9002/healthz", "a variable wins"


async def run_probe(**env: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, PROBE, env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_the_probe_fails_when_nothing_answers():
    code, said = await run_probe(BLITZ_HTTP_PORT=str(free_port()))
    assert code == 1 and said.startswith("unhealthy:")


async def test_the_probe_passes_a_tls_server_whose_name_is_not_loopback(tmp_path: Path):
    """The certificate names the server's public host; the probe knocks on loopback."""
    cert = trustme.CA().issue_cert("blitz.example.com")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(b"".join(pem.bytes() for pem in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(key_file))
    settings = make_settings(tmp_path / "data", tls_cert=str(cert_file), tls_key=str(key_file))
    async with running_server(settings) as server:
        code, said = await run_probe(
            BLITZ_HTTP_PORT=str(server.http_port), BLITZ_TLS_CERT=str(cert_file)
        )
    assert (code, said) == (
        0,
        f"healthy: https://127.0.0.1:{server.http_port}/healthz answered 200\n",
    )


async def test_the_probe_fails_while_the_server_drains(tmp_path: Path):
    settings = make_settings(tmp_path / "data")
    async with running_server(settings) as server:
        assert await run_probe(BLITZ_HTTP_PORT=str(server.http_port)) == (
            0,
            f"healthy: http://127.0.0.1:{server.http_port}/healthz answered 200\n",
        )
        server.gate.close()  # what a SIGTERM does first
        code, said = await run_probe(BLITZ_HTTP_PORT=str(server.http_port))
    assert (code, said) == (
        1,
        f"unhealthy: http://127.0.0.1:{server.http_port}/healthz answered 503\n",
    )
