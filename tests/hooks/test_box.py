"""A command hook runs in the session's command box (docs/hooks.md, docs/security.md): it
sees its session's workspace, and not another principal's, whoever made the hook. Skipped,
with the reason, where this machine gives commands no box."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from support.links import ALICE, BOB
from support.wire import Wire, open_wire

from blitz.agent.sandbox import Isolation, available
from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import hooks_pb2 as hk

SECRET = "bob's launch codes"

pytestmark = pytest.mark.skipif(
    not (available(Isolation.BOX) or available(Isolation.LANDLOCK)),
    reason="neither the box nor Landlock confines commands on this machine",
)


@pytest.fixture
async def wires(settings: Settings) -> AsyncIterator[tuple[Wire, Wire]]:
    two = replace(settings, tokens="alice:alice-token-1234,bob:bob-token-5678")
    async with running_server(two) as server:
        alice, bob = open_wire("connect", server, ALICE), open_wire("connect", server, BOB)
        try:
            yield alice, bob
        finally:
            await alice.close()
            await bob.close()


async def test_a_hook_cannot_read_another_principals_files(settings: Settings, wires):
    alice, bob = wires
    bobs = await bob.create_session()
    bob_file = settings.workspace_root / bobs.workspace / "codes.txt"
    bob_file.write_text(SECRET)
    mine = await alice.create_session()
    (settings.workspace_root / mine.workspace / "mine.txt").write_text("alice's own notes")
    # It tells what it could read in its reason: its stderr, as it blocks.
    command = f"cat >/dev/null; cat mine.txt {bob_file} >&2; ls {bob_file.parent} >&2; exit 2"
    hook = (
        await alice.call(
            "CreateHook", hk.CreateHookRequest(event=hk.HOOK_EVENT_TURN_START, command=command)
        )
    ).hook
    events = await alice.run_all(mine.id, "hello")
    [outcome] = [e.hook for e in events if e.HasField("hook")]
    assert outcome.hook_id == hook.id
    assert "alice's own notes" in outcome.reason, "its own workspace is there"
    assert SECRET not in outcome.reason and "codes.txt\n" not in outcome.reason
    assert bob_file.read_text() == SECRET
