"""A workspace name belongs to the principal that first used it, on both wires.

Bob naming alice's workspace (by its name, by her session's id, or below it) gets a
folder of his own: the same answer as for a name nobody used, and nothing of hers. Alice
naming it again gets hers. Only an admin may name a principal's own folder (`@alice/…`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.servers import make_settings
from support.wire import Wire, expect_error

from blitz.server import RunningServer, running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError
from blitz_client._connect import ConnectTransport
from blitz_client._grpc import GrpcTransport

TOKENS = "alice:alice-token-1234,bob:bob-token-5678,root:root-token-9012:admin"


@pytest.fixture
async def server(tmp_path) -> AsyncIterator[RunningServer]:
    async with running_server(make_settings(tmp_path / "data", tokens=TOKENS)) as running:
        yield running


@pytest.fixture(params=["grpc", "connect"])
async def clients(server: RunningServer, request: pytest.FixtureRequest):
    def client(token: str) -> Wire:
        headers = {"authorization": f"Bearer {token}"}
        if request.param == "grpc":
            return Wire("grpc", GrpcTransport(server.grpc_target, headers=headers, tls=False))
        return Wire("connect", ConnectTransport(server.http_url, headers=headers))

    made = {name: client(f"{name}-token-{n}") for name, n in
            (("alice", "1234"), ("bob", "5678"), ("root", "9012"))}  # fmt: skip
    try:
        yield made
    finally:
        for wire in made.values():
            await wire.close()


async def read(wire: Wire, session_id: str, path: str) -> bytes | None:
    """The file's bytes, or None when the server says it is not there (FILE_NOT_FOUND):
    any other failure, a crash included, fails the test rather than passing as absent."""
    try:
        answer = await wire.call("ReadFile", w.ReadFileRequest(session_id=session_id, path=path))
    except BlitzError as error:
        if error.reason != "FILE_NOT_FOUND":
            raise
        return None
    return bytes(answer.content)


async def test_another_principal_naming_a_workspace_gets_a_folder_of_its_own(
    server: RunningServer, clients: dict[str, Wire]
):
    alice, bob = clients["alice"], clients["bob"]
    hers = await alice.create_session(workspace="acme-app")
    folder = server.settings.workspace_root / hers.workspace
    (folder / "secrets.md").write_text("alice's plans\n")
    own = await alice.create_session(workspace="acme-app")
    assert own.workspace == hers.workspace, "alice's name is hers, session after session"

    for name in ("acme-app", hers.id, f"{hers.id}/sub", "never-used"):
        his = await bob.create_session(workspace=name)
        assert his.workspace == f"@bob/{name}", "the same answer whether the name was used"
        assert await read(bob, his.id, "secrets.md") is None
        assert not (server.settings.workspace_root / his.workspace / "secrets.md").exists()
    assert (folder / "secrets.md").read_text() == "alice's plans\n"


async def test_only_an_admin_may_name_a_principals_own_folder(
    server: RunningServer, clients: dict[str, Wire]
):
    hers = await clients["alice"].create_session(workspace="acme-app")
    (server.settings.workspace_root / hers.workspace / "secrets.md").write_text("x\n")
    error = await expect_error(
        clients["bob"].create_session(workspace=hers.workspace),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "workspace"
    admins = await clients["root"].create_session(workspace=hers.workspace)
    assert admins.workspace == hers.workspace
    assert await read(clients["root"], admins.id, "secrets.md") == b"x\n"


async def test_a_sessions_own_workspace_is_its_id(clients: dict[str, Wire]):
    session = await clients["bob"].create_session()
    assert session.workspace == session.id
    listed = await clients["alice"].call("ListSessions", s.ListSessionsRequest())
    assert session.id not in {x.id for x in listed.sessions}
