"""HookService (docs/hooks.md, "Managing hooks"): made, listed, changed, tested and
deleted; whose hook is whose; the operator's declared hooks; what each call refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.struct_pb2 import Struct
from support.links import ALICE, BOB
from support.wire import Wire, expect_error, open_wire

from blitz.config import Settings, load_settings
from blitz.config.hooks import DeclaredHook
from blitz.core.hook_service.declared import declared_specs
from blitz.server import RunningServer, running_server
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t

from .conftest import Session

ROOT = {"authorization": "Bearer root-token-0000"}
PRE_TOOL = hk.HOOK_EVENT_PRE_TOOL


async def test_a_hook_is_made_listed_changed_tested_and_deleted(session: Session):
    wire = session.wire
    made = await wire.call(
        "CreateHook",
        hk.CreateHookRequest(
            event=PRE_TOOL,
            command="cat >/dev/null; echo checked >&2; exit 2",
            commands=["git push"],
            description="no pushes",
        ),
    )
    hook = made.hook
    assert hook.id.startswith("hk_") and made.secret == "", "a command hook has no secret"
    assert (hook.timeout.seconds, hook.fail_open, hook.owner, hook.server_wide) == (
        60,
        False,
        "",
        False,
    )
    listed = await wire.call("ListHooks", hk.ListHooksRequest())
    assert [h.id for h in listed.hooks] == [hook.id]
    request = hk.UpdateHookRequest(
        hook_id=hook.id,
        timeout=Duration(seconds=5),
        description="still no pushes",
        update_mask=FieldMask(paths=["timeout", "description"]),
    )
    changed = await wire.call("UpdateHook", request)
    assert (changed.timeout.seconds, changed.description, list(changed.commands)) == (
        5,
        "still no pushes",
        ["git push"],
    ), "what the mask does not name stays"
    tested = await wire.call("TestHook", hk.TestHookRequest(hook_id=hook.id))
    assert (tested.status, tested.stderr, tested.outcome.decision) == (
        2,
        "checked\n",
        t.HOOK_DECISION_DENY,
    )
    mine = Struct()
    mine.update({"tool_name": "Bash", "tool_input": {"command": "ls"}})
    again = await wire.call(
        "TestHook", hk.TestHookRequest(hook_id=hook.id, input=mine, session_id=session.id)
    )
    assert again.outcome.reason == "checked"
    await wire.call("DeleteHook", hk.DeleteHookRequest(hook_id=hook.id))
    await expect_error(
        wire.call("GetHook", hk.GetHookRequest(hook_id=hook.id)), "not_found", "HOOK_NOT_FOUND"
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"event": PRE_TOOL}, "command"),
        ({"event": PRE_TOOL, "command": "true", "url": "https://example.com/h"}, "command"),
        ({"event": 0, "command": "true"}, "event"),
        ({"event": PRE_TOOL, "url": "ftp://example.com/h"}, "url"),
        ({"event": hk.HOOK_EVENT_TURN_START, "command": "true", "tools": ["Bash"]}, "tools"),
        ({"event": PRE_TOOL, "command": "true", "paths": ["**/a/**/b/**"]}, "paths"),
        ({"event": PRE_TOOL, "command": "true", "timeout": Duration(seconds=601)}, "timeout"),
        ({"event": PRE_TOOL, "command": "a\x00b"}, "command"),
    ],
)
async def test_what_create_hook_refuses(client: Wire, fields, field):
    error = await expect_error(
        client.call("CreateHook", hk.CreateHookRequest(**fields)),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == field


async def test_a_hooks_kind_cannot_change(client: Wire):
    made = await client.call("CreateHook", hk.CreateHookRequest(event=PRE_TOOL, command="true"))
    request = hk.UpdateHookRequest(
        hook_id=made.hook.id, url="https://example.com/", update_mask=FieldMask(paths=["url"])
    )
    await expect_error(client.call("UpdateHook", request), "invalid_argument", "INVALID_ARGUMENT")


# Whose is what


@pytest.fixture
def principals(hook_settings: Settings) -> Settings:
    return replace(
        hook_settings,
        tokens="alice:alice-token-1234,bob:bob-token-5678,root:root-token-0000:admin",
        hooks=(
            DeclaredHook(name="audit", event="post_tool", command="cat >/dev/null"),
            DeclaredHook(
                name="bobs", event="turn_start", command="cat >/dev/null", principal="bob"
            ),
        ),
    )


@pytest.fixture
async def served(principals: Settings) -> AsyncIterator[RunningServer]:
    async with running_server(principals) as running:
        yield running


@pytest.fixture
async def wires(served: RunningServer) -> AsyncIterator[dict[str, Wire]]:
    wires = {
        name: open_wire("connect", served, headers)
        for name, headers in (("alice", ALICE), ("bob", BOB), ("root", ROOT))
    }
    try:
        yield wires
    finally:
        for wire in wires.values():
            await wire.close()


async def test_a_principal_sees_its_own_hooks_and_those_that_run_in_its_sessions(wires):
    alice, bob, root = wires["alice"], wires["bob"], wires["root"]
    mine = (
        await alice.call("CreateHook", hk.CreateHookRequest(event=PRE_TOOL, command="true"))
    ).hook
    assert mine.owner == "alice"
    wide = (
        await root.call(
            "CreateHook",
            hk.CreateHookRequest(event=PRE_TOOL, command="true", server_wide=True),
        )
    ).hook
    listed = await bob.call("ListHooks", hk.ListHooksRequest())
    assert [h.id for h in listed.hooks] == ["hk_config_audit", "hk_config_bobs", wide.id]
    listed = await alice.call("ListHooks", hk.ListHooksRequest())
    assert [h.id for h in listed.hooks] == ["hk_config_audit", wide.id, mine.id]
    await expect_error(
        bob.call("GetHook", hk.GetHookRequest(hook_id=mine.id)), "not_found", "HOOK_NOT_FOUND"
    )
    await expect_error(
        bob.call("DeleteHook", hk.DeleteHookRequest(hook_id=mine.id)), "not_found", "HOOK_NOT_FOUND"
    )
    await expect_error(
        bob.call("TestHook", hk.TestHookRequest(hook_id=mine.id)), "not_found", "HOOK_NOT_FOUND"
    )
    await expect_error(
        alice.call("DeleteHook", hk.DeleteHookRequest(hook_id=wide.id)),
        "permission_denied",
        "PERMISSION_DENIED",
    )
    everything = await root.call("ListHooks", hk.ListHooksRequest())
    assert {h.id for h in everything.hooks} >= {mine.id, wide.id, "hk_config_bobs"}


async def test_only_an_admin_makes_a_server_wide_hook(wires):
    await expect_error(
        wires["alice"].call(
            "CreateHook", hk.CreateHookRequest(event=PRE_TOOL, command="true", server_wide=True)
        ),
        "permission_denied",
        "PERMISSION_DENIED",
    )


async def test_a_declared_hook_runs_and_changes_only_in_the_file(wires):
    bob = wires["bob"]
    declared = await bob.call("GetHook", hk.GetHookRequest(hook_id="hk_config_bobs"))
    assert (declared.declared, declared.owner, declared.server_wide) == ("bobs", "bob", False)
    request = hk.UpdateHookRequest(
        hook_id="hk_config_bobs", disabled=True, update_mask=FieldMask(paths=["disabled"])
    )
    await expect_error(bob.call("UpdateHook", request), "permission_denied", "PERMISSION_DENIED")
    session = await bob.create_session()
    events = await bob.run_all(session.id, "hello")
    assert [e.hook.hook_id for e in events if e.HasField("hook")] == ["hk_config_bobs"]
    session = await wires["alice"].create_session()
    events = await wires["alice"].run_all(session.id, "hello")
    assert not any(e.HasField("hook") for e in events), "bob's declared hook is bob's alone"


def test_a_declared_hook_that_cannot_run_stops_the_server_from_starting():
    with pytest.raises(ValueError, match=r"'web'.*secret"):
        declared_specs([DeclaredHook(name="web", event="pre_tool", url="https://example.com/")])
    with pytest.raises(ValueError, match=r"'m'.*matchers"):
        declared_specs([DeclaredHook(name="m", event="turn_end", command="x", tools=("Bash",))])


def test_the_files_hooks_are_read_with_their_fail_and_their_faults_named(tmp_path):
    config = tmp_path / "blitz.toml"
    config.write_text(
        '[[hooks]]\nname = "lint"\nevent = "post_tool"\ncommand = "make lint"\n'
        'fail = "open"\ntimeout = 30\nprincipal = "alice"\n'
    )
    (lint,) = load_settings({}, {}, config=str(config)).hooks
    assert (lint.fail_open, lint.timeout, lint.principal) == (True, 30.0, "alice")
    for table, fault in (
        ('name = "x"\nevent = "before"\ncommand = "true"', "event must be one of"),
        ('name = "x"\nevent = "pre_tool"', "give one of command and url"),
        ('name = "x"\nevent = "pre_tool"\ncommand = "true"\nfail = "maybe"', "fail must be"),
        ('name = "x"\nevent = "pre_tool"\ncommand = "true"\ntimeout = 0', "timeout must be"),
    ):
        config.write_text(f"[[hooks]]\n{table}\n")
        with pytest.raises(ValueError, match=fault):
            load_settings({}, {}, config=str(config))
