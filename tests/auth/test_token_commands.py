"""`blitz token create|list|revoke` on the server's database, and what they change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.servers import make_settings
from support.wire import Wire, expect_error

from blitz.auth import parse_tokens, token_hash
from blitz.server import running_server
from blitz.v1 import session_pb2 as s
from blitz_client._grpc import GrpcTransport


def blitz(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    return subprocess.run(
        [sys.executable, "-m", "blitz.cli", "token", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


async def test_a_created_token_is_printed_once_and_works_until_revoked(tmp_path: Path):
    data = tmp_path / "data"
    created = blitz(data, "create", "alice")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("blz_") and len(token) > 40
    listing = blitz(data, "list")
    assert "alice" in listing.stdout and token not in listing.stdout, "only its hash is kept"

    async with running_server(make_settings(data)) as server:
        wire = Wire(
            "grpc",
            GrpcTransport(
                server.grpc_target, headers={"authorization": f"Bearer {token}"}, tls=False
            ),
        )
        try:
            session = await wire.create_session(title="mine")
            revoked = blitz(data, "revoke", "alice")
            assert (revoked.returncode, revoked.stdout) == (0, "revoked 1 token\n")
            # Within a second, the revocation reaches the running server.
            refused = None
            for _ in range(30):
                try:
                    await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
                except Exception as exc:
                    refused = exc
                    break
                await __import__("asyncio").sleep(0.1)
            assert refused is not None, "a revoked token stopped working"
            await expect_error(
                wire.call("ListSessions", s.ListSessionsRequest()),
                "unauthenticated",
                "UNAUTHENTICATED",
            )
        finally:
            await wire.close()
    assert blitz(data, "revoke", "alice").returncode == 1, "nothing live is left to revoke"
    assert blitz(data, "create", "not a name").returncode == 2


def test_tokens_from_settings_may_be_given_as_their_hash():
    tokens = parse_tokens(
        f"alice:secret-1, root:sha256-{token_hash('secret-2')}:admin # the operator\n",
        source="--tokens",
    )
    assert [(t.principal.name, t.principal.admin, t.hash) for t in tokens] == [
        ("alice", False, token_hash("secret-1")),
        ("root", True, token_hash("secret-2")),
    ]


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("alice", "token 1: write it NAME:TOKEN"),
        ("alice:x,bob:y:root", "token 2: the third part may only be 'admin'"),
        ("al ice:x", "token 1: 'al ice' is no principal name"),
    ],
)
def test_a_bad_token_entry_is_refused_without_echoing_a_secret(text: str, wrong: str):
    with pytest.raises(ValueError, match=wrong) as refused:
        parse_tokens(text, source="--tokens")
    assert ":x" not in str(refused.value) and ":y" not in str(refused.value)


async def test_the_first_token_made_while_a_server_runs_is_required_within_seconds(
    tmp_path: Path,
):
    """It used to stay open to callers without a token until a restart."""
    data = tmp_path / "data"
    async with running_server(make_settings(data)) as server:
        anyone = Wire("grpc", GrpcTransport(server.grpc_target, headers={}, tls=False))
        try:
            await anyone.create_session(title="before")
            info = await anyone.call("GetServerInfo", s.GetServerInfoRequest())
            assert "tokens" not in info.features
            created = blitz(data, "create", "alice")
            assert created.returncode == 0, created.stderr
            assert "requires one from within seconds" in created.stderr
            token = created.stdout.strip()
            refused = None
            for _ in range(100):  # it looks every two seconds: far within this
                try:
                    await anyone.call("ListSessions", s.ListSessionsRequest())
                except Exception as exc:
                    refused = exc
                    break
                await __import__("asyncio").sleep(0.1)
            assert refused is not None, "a call without a token is refused"
            await expect_error(
                anyone.call("ListSessions", s.ListSessionsRequest()),
                "unauthenticated",
                "UNAUTHENTICATED",
            )
            alice = Wire(
                "grpc",
                GrpcTransport(
                    server.grpc_target, headers={"authorization": f"Bearer {token}"}, tls=False
                ),
            )
            try:
                info = await alice.call("GetServerInfo", s.GetServerInfoRequest())
                assert "tokens" in info.features
                assert (await alice.create_session(title="after")).title == "after"
            finally:
                await alice.close()
        finally:
            await anyone.close()
