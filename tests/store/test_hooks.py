"""The hooks' part of the store contract (docs/hooks.md), on both engines: kept, listed in
the order they run, changed and deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from blitz.config import Settings
from blitz.store import HookRecord, Store, open_store
from blitz.v1 import hooks_pb2 as hk

pytestmark = pytest.mark.engines("sqlite", "postgres")


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with open_store(settings.database) as opened:
        yield opened


def hook(hook_id: str, owner: str = "alice", *, at: float, server_wide: bool = False) -> HookRecord:
    spec = hk.Hook(event=hk.HOOK_EVENT_PRE_TOOL, command=f"echo {hook_id}")
    return HookRecord(
        id=hook_id,
        owner=owner,
        server_wide=server_wide,
        spec=spec.SerializeToString(),
        secret="",
        create_time=at,
        update_time=at,
    )


async def test_a_principals_hooks_are_listed_after_the_server_wide_ones_oldest_first(store):
    await store.add_hook(hook("hk_a2", at=3.0))
    await store.add_hook(hook("hk_a1", at=1.0))
    await store.add_hook(hook("hk_bob", "bob", at=2.0))
    await store.add_hook(hook("hk_wide", "root", at=4.0, server_wide=True))
    assert [h.id for h in await store.list_hooks("alice")] == ["hk_wide", "hk_a1", "hk_a2"]
    assert [h.id for h in await store.list_hooks("bob")] == ["hk_wide", "hk_bob"]
    everyone = await store.list_hooks()
    assert [h.id for h in everyone] == ["hk_a1", "hk_bob", "hk_a2", "hk_wide"]


async def test_a_hook_is_kept_whole_changed_and_deleted(store):
    made = hook("hk_1", at=1.0)
    made.secret = "whsec_x"
    await store.add_hook(made)
    assert await store.get_hook("hk_1") == made
    changed = hk.Hook(event=hk.HOOK_EVENT_PRE_TOOL, command="true", disabled=True)
    made.spec, made.update_time = changed.SerializeToString(), 5.0
    assert await store.update_hook(made)
    got = await store.get_hook("hk_1")
    assert got is not None and hk.Hook.FromString(got.spec).disabled and got.update_time == 5.0
    assert got.server_wide is False and got.secret == "whsec_x"
    assert await store.delete_hook("hk_1")
    assert await store.get_hook("hk_1") is None
    assert not await store.delete_hook("hk_1"), "a second delete finds nothing"
    assert not await store.update_hook(made), "nor does an update of a deleted hook"
