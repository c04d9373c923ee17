"""TLS on both ports, from a certificate and key file; the SDK and CLI trust a CA file."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from support.servers import make_settings

from blitz.server import RunningServer, running_server
from blitz_client import AsyncBlitz, BlitzError


@dataclass
class Pki:
    ca_file: str
    cert_file: str
    key_file: str


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    paths = Pki(str(tmp_path / "ca.pem"), str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    ca.cert_pem.write_to_path(paths.ca_file)
    Path(paths.cert_file).write_bytes(b"".join(pem.bytes() for pem in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(paths.key_file)
    return paths


@pytest.fixture
async def server(tmp_path: Path, pki: Pki) -> AsyncIterator[RunningServer]:
    settings = make_settings(tmp_path / "data", tls_cert=pki.cert_file, tls_key=pki.key_file)
    async with running_server(settings) as running:
        yield running


def urls(server: RunningServer) -> dict[str, str]:
    return {"grpc": f"grpcs://{server.grpc_target}", "connect": server.http_url}


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_the_sdk_talks_tls_to_both_ports_trusting_the_ca_file(server, pki, kind):
    assert server.http_url.startswith("https://")
    async with AsyncBlitz(urls(server)[kind], ca_file=pki.ca_file) as blitz:
        session = await blitz.create_session(title="over tls")
        events = [e async for e in blitz.run(session.id, "hello over TLS")]
    assert "hello over TLS" in events[-1].finished.output


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_server_the_client_does_not_trust_is_not_spoken_to(server, kind):
    async with AsyncBlitz(urls(server)[kind], reconnect_timeout=0.5) as blitz:
        with pytest.raises(BlitzError) as refused:
            await asyncio.wait_for(blitz.create_session(), 20)
    assert refused.value.code == "unavailable"


async def test_plain_http_to_a_tls_port_gets_no_answer(server):
    async with AsyncBlitz(server.http_url.replace("https://", "http://")) as blitz:
        with pytest.raises(BlitzError):
            await asyncio.wait_for(blitz.create_session(), 20)


async def test_the_cli_uses_the_ca_file(server, pki):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "run", "hi from the cli",
        "--server", server.http_url, "--ca-file", pki.ca_file,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "hi from the cli" in out.decode()


async def test_a_ca_certificate_served_as_the_servers_is_warned_of(tmp_path: Path):
    """What `openssl req -x509` makes: grpcio takes it, Connect on rustls refuses it."""
    from structlog.testing import capture_logs

    ca = trustme.CA()
    cert, key = tmp_path / "ca.pem", tmp_path / "ca-key.pem"
    ca.cert_pem.write_to_path(str(cert))
    ca.private_key_pem.write_to_path(str(key))
    settings = make_settings(tmp_path / "data", tls_cert=str(cert), tls_key=str(key))
    with capture_logs() as logs:
        async with running_server(settings):
            pass
    [warned] = [e for e in logs if "CA's" in e["event"]]
    assert warned["log_level"] == "warning" and "CaUsedAsEndEntity" in warned["event"]


async def test_a_leaf_certificate_is_not_warned_of(tmp_path: Path, pki: Pki):
    from structlog.testing import capture_logs

    settings = make_settings(tmp_path / "data", tls_cert=pki.cert_file, tls_key=pki.key_file)
    with capture_logs() as logs:
        async with running_server(settings):
            pass
    assert not [e for e in logs if "CA's" in e["event"]]


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_plain_client_at_a_tls_port_is_told_to_use_tls(server, kind):
    plain = {"grpc": server.grpc_target, "connect": server.http_url.replace("https", "http")}
    async with AsyncBlitz(plain[kind], reconnect_timeout=0.5) as blitz:
        with pytest.raises(BlitzError) as refused:
            await asyncio.wait_for(blitz.create_session(), 20)
    secure = {"grpc": f"grpcs://{server.grpc_target}", "connect": server.http_url}[kind]
    assert f"if this port serves TLS, connect to {secure}" in refused.value.message


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_tls_client_at_a_plain_port_is_told_it_does_not_serve_tls(tmp_path, pki, kind):
    async with running_server(make_settings(tmp_path / "plain")) as plain:
        urls = {
            "grpc": f"grpcs://{plain.grpc_target}",
            "connect": plain.http_url.replace("http://", "https://"),
        }
        async with AsyncBlitz(urls[kind], ca_file=pki.ca_file, reconnect_timeout=0.5) as blitz:
            with pytest.raises(BlitzError) as refused:
                await asyncio.wait_for(blitz.create_session(), 20)
    address = {"grpc": plain.grpc_target, "connect": plain.http_url}[kind]
    assert f"this port does not serve TLS: connect to {address}" in refused.value.message


async def test_the_cli_says_so_too(server):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "sessions", "--server", server.grpc_target,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1
    assert "if this port serves TLS, connect to grpcs://" in " ".join(err.decode().split())


def _self_signed(tmp_path: Path, *, ca: bool) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key: a CA's, as `openssl req -x509`
    makes by default, or a leaf (basicConstraints=critical,CA:FALSE, as the hint says)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


@pytest.mark.parametrize("ca", [True, False], ids=["ca-flagged", "leaf"])
async def test_the_cli_says_how_to_make_a_leaf_when_the_server_serves_a_cas_certificate(
    tmp_path: Path, ca: bool
):
    """rustls refuses a CA's certificate as the server's own (CaUsedAsEndEntity): the CLI
    says how to make a leaf, and the leaf it describes is then taken."""
    cert, key = _self_signed(tmp_path, ca=ca)
    settings = make_settings(tmp_path / "data", tls_cert=cert, tls_key=key)
    async with running_server(settings) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "blitz.cli", "sessions", "--server", server.http_url,
            "--ca-file", cert,
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    said = " ".join(err.decode().split())  # as one line, however the terminal wrapped it
    if ca:
        assert proc.returncode != 0
        assert "CaUsedAsEndEntity" in said
        assert "-addext basicConstraints=critical,CA:FALSE" in said
    else:
        assert proc.returncode == 0, said
