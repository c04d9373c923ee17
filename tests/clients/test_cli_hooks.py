"""`blitz hooks` as a person and a script call it, against a real server: each action, its
exit code, the field a refusal names, and docs/hooks.md's example as written."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
import typing
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.webhooks import LOOPBACK

from blitz.config import Settings
from blitz.config.hooks import HOOK_EVENTS
from blitz.core.hooks.specs import EVENT_NAMES
from blitz.server import RunningServer, running_server
from blitz_client import HOOK_EVENT_NAMES
from blitz_client._hook_calls import HookEventName

DOC = (Path(__file__).resolve().parents[2] / "docs" / "hooks.md").read_text()
PUSH = '{"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}'


async def blitz(server: RunningServer, *args: str) -> tuple[int, str, str]:
    """Run `blitz hooks ARGS` against `server`: exit code, stdout, stderr (tables as wide
    as their cells: no COLUMNS of the test's terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", "hooks", *args, "--server", server.grpc_target,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.fixture
async def loopback_server(settings: Settings) -> AsyncIterator[RunningServer]:
    """A server whose HTTP hooks may reach 127.0.0.1."""
    async with running_server(replace(settings, webhook_allow_private=LOOPBACK)) as running:
        yield running


async def test_create_list_show_update_test_and_delete_a_command_hook(server):
    code, out, err = await blitz(
        server, "create", "pre_tool",
        "--command", "cat >/dev/null; echo no pushes >&2; exit 2",
        "--tools", "Bash", "run_command", "--commands", "git push", "--timeout", "10",
        "--description", "no pushes", "--json",
    )  # fmt: skip
    assert code == 0, err
    made = json.loads(out)
    hid = made["hook"]["id"]
    assert made["hook"]["event"] == "HOOK_EVENT_PRE_TOOL" and "secret" not in made
    assert made["hook"]["tools"] == ["Bash", "run_command"]
    assert (made["hook"]["commands"], made["hook"]["timeout"]) == (["git push"], "10s")

    code, out, _ = await blitz(server, "list")
    assert code == 0 and hid in out and "pre_tool" in out and "active" in out
    code, out, _ = await blitz(server, "show", hid)
    assert code == 0 and f"hook {hid} · pre_tool · yours · no pushes" in out
    assert "tools Bash run_command; commands git push" in out and "timeout 10 s" in out

    code, out, err = await blitz(
        server, "update", hid, "--disable", "--fail-open", "--tools", "--timeout", "5"
    )
    assert code == 0, err
    assert "disabled" in out and "timeout 5 s" in out and "fail open" in out
    code, out, _ = await blitz(server, "show", hid, "--json")
    shown = json.loads(out)
    assert shown["disabled"] and "tools" not in shown, "--tools with none cleared them"
    assert shown["commands"] == ["git push"], "what no flag named stays"

    code, out, err = await blitz(server, "test", hid, "--input", PUSH)
    assert code == 0, err
    assert "decision deny: no pushes" in out and "exit 2" in out
    code, out, _ = await blitz(server, "test", hid, "--json")
    tested = json.loads(out)
    assert (code, tested["outcome"]["decision"], tested["status"]) == (0, "HOOK_DECISION_DENY", 2)

    code, out, _ = await blitz(server, "delete", hid)
    assert (code, out.strip()) == (0, f"deleted {hid}")
    code, _, err = await blitz(server, "show", hid)
    assert code == 1 and "HOOK_NOT_FOUND" in err
    code, out, err = await blitz(server)
    assert (code, out) == (0, "") and "no hooks" in err


async def test_an_http_hook_shows_its_secret_once_and_a_failed_test_exits_1(loopback_server):
    code, out, err = await blitz(
        loopback_server, "create", "turn_end", "--url", "http://127.0.0.1:9/hook"
    )
    assert code == 0, err
    hid = re.search(r"hook (hk_\w+)", out).group(1)  # type: ignore[union-attr]
    assert re.search(r"secret whsec_\S+ \(shown only now", out)
    code, out, _ = await blitz(loopback_server, "show", hid)
    assert "whsec_" not in out and "runs http://127.0.0.1:9/hook" in out
    code, out, _ = await blitz(loopback_server, "test", hid)
    assert code == 1, "nothing listens on port 9: the hook failed"
    assert "failed" in out and "no HTTP answer" in out


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["turn_start", "--command", "true", "--tools", "Bash"], "tools"),
        (["pre_tool", "--command", "true", "--paths", "**/a/**/b/**"], "paths"),
        (["pre_tool", "--url", "ftp://example.com/h"], "url"),
    ],
)
async def test_what_the_server_refuses_exits_1_naming_the_field(server, args, field):
    code, _, err = await blitz(server, "create", *args)
    assert code == 1 and "INVALID_ARGUMENT" in err, err
    assert re.search(rf"INVALID_ARGUMENT {field}\b", err), err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["create", "pre_push", "--command", "true"], "invalid choice: 'pre_push'"),
        (["create", "pre_tool"], "one of the arguments --command --url is required"),
        (["create", "pre_tool", "--command", "x", "--url", "https://e.com"], "not allowed"),
        (["create", "pre_tool", "--command", "x", "--timeout", "601"], "at most 600"),
        (["update", "hk_x"], "say what to change"),
        (["update", "hk_x", "--enable", "--disable"], "not allowed"),
        (["test", "hk_x", "--input", "{not json"], "--input is not JSON"),
        (["test", "hk_x", "--input", "[1, 2]"], "must be a JSON object"),
    ],
)
async def test_bad_usage_exits_2_before_any_call(server, args, said):
    code, out, err = await blitz(server, *args)
    assert (code, out) == (2, "") and said in err, err


async def test_the_docs_example_makes_and_tests_its_hook(server):
    section = DOC[DOC.index("## Managing hooks") :]
    block = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    assert block, "no sh block in docs/hooks.md's Managing hooks"
    create_line, test_line = block.group(1).replace("\\\n", " ").strip().splitlines()
    blitz_cli = f"{shlex.quote(sys.executable)} -m blitz.cli"
    where = f"--server {server.grpc_target}"

    async def run(line: str) -> tuple[int, str, str]:
        script = line.replace(".venv/bin/blitz", blitz_cli) + f" {where}"
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", script, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return proc.returncode or 0, out.decode(), err.decode()

    code, out, err = await run(create_line)
    assert code == 0, err
    hid = re.search(r"hook (hk_\w+)", out).group(1)  # type: ignore[union-attr]
    code, out, err = await run(test_line.replace("hk_…", hid))
    assert code == 0, err
    assert "decision deny: no pushes from here" in out


def test_the_event_names_are_the_same_everywhere():
    """The SDK's (from the proto), its type's, the server's and the configuration's."""
    assert list(HOOK_EVENT_NAMES) == list(EVENT_NAMES.values())
    assert dict(HOOK_EVENT_NAMES) == {name: event for event, name in EVENT_NAMES.items()}
    assert list(typing.get_args(HookEventName)) == list(EVENT_NAMES.values())
    assert list(HOOK_EVENTS) == list(EVENT_NAMES.values())
