"""Which actions a hook runs for (docs/hooks.md, "Matchers"): tool names and globs, Claude
Code's names of Blitz's tools, command prefixes read as rules read them (but matching any
part of a command), and path globs."""

from __future__ import annotations

import pytest
from support.wire import decide, drive

from blitz.core.hooks.matching import Target, applies, claude_name
from blitz.core.hooks.specs import HookSpec
from blitz.v1 import hooks_pb2 as hk

from .conftest import Session, hook_events, kinds


def spec(**fields: tuple[str, ...]) -> HookSpec:
    return HookSpec(id="hk_t", event=hk.HOOK_EVENT_PRE_TOOL, command="true", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tools", "tool", "runs"),
    [
        ((), "run_command", True),
        (("run_command",), "run_command", True),
        (("run_command",), "write_file", False),
        (("Bash",), "run_command", True),
        (("Bash",), "execute", True),  # an ACP agent's command
        (("Write|Edit",), "edit_file", True),
        (("Write|Edit",), "fetch_url", False),
        (("mcp.*",), "github.create_issue", False),
        (("github.*",), "github.create_issue", True),
        (("mcp__github__*",), "github.create_issue", True),
        (("*_file",), "delete_file", True),
    ],
)
def test_tools_match_by_name_glob_and_claude_codes_names(tools, tool, runs):
    assert applies(spec(tools=tools), Target(tool)) is runs


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("git push --force origin main", True),
        ("git status", False),
        ("true && git push -f", True),  # any part, unlike an allow rule
        ("make; git push", True),
        ("echo $(git push)", True),  # a substitution: nothing vouches for it
        ("GIT_TRACE=1 git push", True),  # what it runs, its variables aside
        ("git pushy", False),
    ],
)
def test_command_prefixes_match_any_part_and_anything_unreadable(command, runs):
    assert applies(spec(commands=("git push",)), Target("run_command", command=command)) is runs


def test_a_hook_with_commands_or_paths_runs_for_those_actions_only():
    assert not applies(spec(commands=("rm",)), Target("write_file", path="a.txt"))
    assert not applies(spec(paths=("src/**",)), Target("run_command", command="ls"))
    assert applies(spec(paths=("src/**/*.py",)), Target("write_file", path="src/a/b.py"))
    assert not applies(spec(paths=("src/**/*.py",)), Target("write_file", path="docs/b.py"))


def test_the_json_names_tools_as_claude_code_does():
    assert [claude_name(n) for n in ("run_command", "write_file", "edit_file", "fetch_url")] == [
        "Bash",
        "Write",
        "Edit",
        "WebFetch",
    ]
    assert claude_name("github.create_issue") == "mcp__github__create_issue"
    assert claude_name("delete_file") == "delete_file"


async def test_a_prefix_hook_runs_for_the_commands_it_names_and_no_other(session: Session):
    command = session.script("no_push.sh", "cat >/dev/null\necho no pushes >&2\nexit 2\n")
    await session.hook("pre_tool", command, commands=["git push"])
    pushed = await session.run("$ true && git push origin main")
    assert [h.reason for h in hook_events(pushed)] == ["no pushes"]
    other = await drive(
        session.wire, session.id, "$ git status", decide(session.wire, session.id, "deny")
    )
    assert "hook" not in kinds(other) and "approval_request" in kinds(other)


async def test_a_path_hook_guards_the_paths_it_names(session: Session):
    command = session.script("no_ci.sh", "cat >/dev/null\necho CI files are reviewed >&2\nexit 2\n")
    await session.hook("pre_tool", command, paths=[".github/**"], tools=["write_file"])
    events = await session.run("write .github/workflows/ci.yml\n```\non: push\n```")
    assert [h.reason for h in hook_events(events)] == ["CI files are reviewed"]
    assert not (session.workspace / ".github").exists()
