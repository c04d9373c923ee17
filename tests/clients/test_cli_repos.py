"""`blitz run --repo`, `diff`, `patch` and `push` as a person or a script calls them: a real
server that allows the test's origins, the real `blitz` command, real git.

The origin is a bare repository made here (`file://`, allowed by `repo_allow`); a turn of
the demo agent writes and edits files in its clone; what the commands hand back is checked
with git itself: `git am` applies the patch series to the original commit, `git bundle
verify` takes the bundle, and an approved push is a branch of the origin.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.blitz_serve import BlitzServe
from support.chat_screens import FOOTER
from support.cli import blitz, start_blitz
from support.servers import make_settings
from support.terminals import PtyEOF, PtyProcess

from blitz.config import Settings
from blitz_client import repository_source

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")

# The turn: a new file by write_file, and an edit of one the origin has.
CHANGES = """write NOTES.md
```
Notes from the turn.
```
edit hello.py
```
print("hello")
```
```
print("hello, repository")
```
"""


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


@dataclass
class Origin:
    bare: Path
    url: str
    main: str  # main's commit


@pytest.fixture
def origin(tmp_path: Path) -> Origin:
    """A bare repository with one commit on main: README.md and hello.py."""
    bare = tmp_path / "origins" / "origin.git"
    git("init", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    git("clone", str(bare), str(seed))
    (seed / "README.md").write_text("# Origin\n")
    (seed / "hello.py").write_text('print("hello")\n')
    git("add", "-A", cwd=seed)
    git("commit", "-m", "first", cwd=seed)
    git("push", "origin", "main", cwd=seed)
    return Origin(bare=bare, url=f"file://{bare}", main=git("rev-parse", "main", cwd=bare))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The test server allows the repositories under the test's `origins` folder only."""
    return make_settings(tmp_path / "data", repo_allow=(f"file://{tmp_path}/origins/*",))


async def changed_session(server, origin: Origin) -> str:
    """A session cloned from the origin's main whose one turn made CHANGES; its id."""
    code, _, err = await blitz(server, "run", "--repo", f"{origin.url}@main", CHANGES, "--approve")
    assert code == 0, err
    return re.search(r"session (s_\w+)", err).group(1)


async def test_run_from_a_repository_says_where_it_was_cloned_and_diff_shows_the_turn(
    server, origin
):
    code, _, err = await blitz(server, "run", "--repo", f"{origin.url}@main", CHANGES, "--approve")
    assert code == 0, err
    assert f"cloned {origin.url} at {origin.main[:12]} (branch main); ready" in err
    session_id = re.search(r"session (s_\w+)", err).group(1)

    code, whole, _ = await blitz(server, "diff", session_id)
    assert code == 0
    assert "+Notes from the turn." in whole
    assert '-print("hello")\n+print("hello, repository")' in whole
    assert "diff --git a/NOTES.md b/NOTES.md" in whole

    code, turn, _ = await blitz(server, "diff", session_id, "--turn", "1")
    assert (code, turn) == (0, whole), "the only turn's changes are the session's"
    code, _, err = await blitz(server, "diff", session_id, "--turn", "2")
    assert (code, "the session has 1 turn" in err) == (2, True)


async def test_the_patch_series_applies_with_git_am_to_the_original_commit(
    server, origin, tmp_path
):
    session_id = await changed_session(server, origin)
    patch = tmp_path / "x.patch"
    code, out, err = await blitz(server, "patch", session_id, "-o", str(patch))
    assert code == 0, err
    assert out == ""
    assert f"1 commit on {origin.main[:12]} → {patch}" in err
    fresh = tmp_path / "fresh"
    git("clone", str(origin.bare), str(fresh))
    git("am", str(patch), cwd=fresh)
    assert (fresh / "NOTES.md").read_text() == "Notes from the turn.\n"
    assert (fresh / "hello.py").read_text() == 'print("hello, repository")\n'
    assert git("rev-parse", "HEAD~1", cwd=fresh) == origin.main

    code, stdout_patch, _ = await blitz(server, "patch", session_id)
    assert code == 0 and stdout_patch.startswith("From ")
    code, diff, _ = await blitz(server, "patch", session_id, "--format", "diff")
    assert code == 0 and "+Notes from the turn." in diff
    again = tmp_path / "again"
    git("clone", str(origin.bare), str(again))
    (tmp_path / "x.diff").write_text(diff)
    git("apply", str(tmp_path / "x.diff"), cwd=again)
    assert (again / "NOTES.md").exists()


async def test_a_bundle_verifies_against_a_clone_of_the_origin(server, origin, tmp_path):
    session_id = await changed_session(server, origin)
    bundle = tmp_path / "x.bundle"
    code, _, err = await blitz(
        server, "patch", session_id, "--format", "bundle", "--branch", "review/x",
        "--squash", "-m", "All of it", "-o", str(bundle),
    )  # fmt: skip
    assert code == 0, err
    assert f"1 commit on {origin.main[:12]}, branch review/x" in err
    fresh = tmp_path / "fresh"
    git("clone", str(origin.bare), str(fresh))
    git("bundle", "verify", str(bundle), cwd=fresh)
    git("fetch", str(bundle), "review/x:review/x", cwd=fresh)
    assert git("log", "-1", "--format=%s", "review/x", cwd=fresh) == "All of it"


async def test_patch_refuses_flags_that_do_not_go_together(server, origin):
    code, _, err = await blitz(server, "patch", "s_any", "--branch", "b")
    assert (code, "--branch goes with --format bundle" in err) == (2, True)
    code, _, err = await blitz(server, "patch", "s_any", "--format", "diff", "--squash")
    assert code == 2


async def test_an_approved_push_lands_the_branch_in_the_origin(server, origin):
    session_id = await changed_session(server, origin)
    push = await start_blitz(server, "push", session_id, "--branch", "feature/x", "-m", "Notes")
    line = (await asyncio.wait_for(push.stdout.readline(), 60)).decode()
    waiting = re.fullmatch(
        rf"push of (\w{{12}}) to {re.escape(origin.url)} as branch feature/x waits for"
        rf" approval: blitz approve {session_id} (\S+)\n",
        line,
    )
    assert waiting, line
    head, request_id = waiting.groups()
    assert git("--git-dir", str(origin.bare), "branch", "--list", "feature/x") == ""

    code, out, _ = await blitz(server, "approve", session_id, request_id)
    assert (code, out) == (0, f"{request_id}: once\n")
    rest, err = await asyncio.wait_for(push.communicate(), 60)
    assert push.returncode == 0, err.decode()
    pushed = git("--git-dir", str(origin.bare), "rev-parse", "feature/x")
    assert pushed.startswith(head)
    assert f"Pushed branch feature/x to {origin.url}: commit {pushed}." in rest.decode()
    assert git("--git-dir", str(origin.bare), "log", "-1", "--format=%s", "feature/x") == "Notes"
    assert git("--git-dir", str(origin.bare), "rev-parse", "feature/x~1") == origin.main
    assert git("--git-dir", str(origin.bare), "rev-parse", "main") == origin.main


async def test_a_denied_push_leaves_the_origin_as_it_was_and_exits_3(server, origin):
    session_id = await changed_session(server, origin)
    push = await start_blitz(server, "push", session_id, "--branch", "feature/y", "-m", "Mine")
    line = (await asyncio.wait_for(push.stdout.readline(), 60)).decode()
    request_id = line.split()[-1]

    code, _, _ = await blitz(server, "deny", session_id, request_id, "--reason", "not yet")
    assert code == 0
    _, err = await asyncio.wait_for(push.communicate(), 60)
    assert push.returncode == 3
    assert "PUSH_DENIED" in err.decode() and "not yet" in err.decode()
    assert git("--git-dir", str(origin.bare), "branch", "--list", "feature/y") == ""


async def test_push_no_wait_leaves_the_request_open_for_blitz_approve(server, origin):
    session_id = await changed_session(server, origin)
    code, out, err = await blitz(server, "push", session_id, "--no-wait")
    assert code == 0, err
    request_id = out.split()[-1]
    branch = f"blitz/{session_id.removeprefix('s_')[:12]}"
    assert f"as branch {branch} waits for approval" in out

    code, shown, _ = await blitz(server, "sessions", "show", session_id)
    assert f"open request {request_id}" in shown
    assert "approve PUSH" in shown
    code, _, _ = await blitz(server, "approve", session_id, request_id)
    assert code == 0
    for _ in range(100):  # the push runs once approved, in the server
        if git("--git-dir", str(origin.bare), "branch", "--list", branch):
            break
        await asyncio.sleep(0.1)
    assert git("--git-dir", str(origin.bare), "branch", "--list", branch).strip() == branch


async def test_a_source_the_server_does_not_allow_fails_naming_source_url(server, origin, tmp_path):
    elsewhere = tmp_path / "elsewhere.git"
    git("init", "--bare", str(elsewhere))
    code, _, err = await blitz(server, "run", "--repo", f"file://{elsewhere}", "hi")
    assert code == 1
    assert "INVALID_ARGUMENT" in err and "source.url" in err

    code, _, err = await blitz(server, "run", "--depth", "1", "hi")
    assert (code, "--depth and --submodules go with --repo" in err) == (2, True)
    code, _, err = await blitz(server, "run", "--repo", f"{origin.url}@", "hi")
    assert (code, "give a branch, tag or commit" in err) == (2, True)


async def test_export_of_a_session_from_no_repository_is_refused(server):
    code, _, err = await blitz(server, "run", "hello")
    session_id = re.search(r"session (s_\w+)", err).group(1)
    code, _, err = await blitz(server, "patch", session_id)
    assert code == 1
    assert "INVALID_ARGUMENT" in err and "did not start from a repository" in err


@pytest.mark.parametrize(
    ("given", "url", "ref"),
    [
        ("file:///srv/a.git@main", "file:///srv/a.git", "main"),
        ("file:///srv/a.git", "file:///srv/a.git", ""),
        ("https://host/org/repo@v1.git@feature/x", "https://host/org/repo@v1.git", "feature/x"),
        ("https://user@host/a.git", "https://user@host/a.git", ""),
        ("https://user@host", "https://user@host", ""),
        ("/srv/a.git@1a2b3c", "/srv/a.git", "1a2b3c"),
    ],
)
def test_a_ref_is_what_follows_the_last_at_after_the_host(given: str, url: str, ref: str):
    source = repository_source(given, depth=3)
    assert (source.url, source.ref, source.depth) == (url, ref, 3)


class Screen:
    """What a process in a terminal printed, ANSI stripped, waited on pattern by pattern."""

    def __init__(self, child: PtyProcess) -> None:
        self.child = child
        self.text = ""
        self._pos = 0

    def expect(self, pattern: str, within: float = 90) -> re.Match[str]:
        deadline = time.monotonic() + within
        while not (match := re.compile(pattern).search(self.text, self._pos)):
            assert time.monotonic() < deadline, f"{pattern!r} not seen:\n{self.text}"
            try:
                self.text = ANSI.sub("", self.text + self.child.read(timeout=0.2))
            except PtyEOF:
                raise AssertionError(f"{pattern!r} not seen before exit:\n{self.text}") from None
        self._pos = match.end()
        return match

    def prompt(self, text: str) -> None:
        """Wait for the chat's prompt, then type `text` (lines joined by continuations)."""
        self.expect(r"(?m)^› $")
        *lines, last = text.split("\n")
        for line in lines:
            self.child.sendline(line + "\\")
            self.expect(r"… $")
        self.child.sendline(last)


async def test_chat_from_a_repository_says_the_clone_is_ready_and_pushes_once_approved(
    origin, tmp_path
):
    """`blitz chat --repo`: the clone's commit on one line; `/push` asks for approval in a
    panel of its own, and `o` lands the branch."""
    serve = await BlitzServe(
        tmp_path / "serve", f"--repo-allow=file://{tmp_path}/origins/*"
    ).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(TERM="xterm-256color", LANG="C.UTF-8", BLITZ_SERVER=serve.grpc_target)
    child = PtyProcess(
        [sys.executable, "-m", "blitz.cli", "chat", "--repo", f"{origin.url}@main"],
        env=env, rows=50, cols=300,
    )  # fmt: skip
    try:
        screen = Screen(child)
        # The URL may wrap (a long test folder): the line is told by what follows it.
        screen.expect(rf"cloned\s[\s\S]*?\sat {origin.main[:12]} \(branch main\); ready")
        screen.prompt("/mode accept_edits")
        screen.prompt("write NOTES.md\n```\nchatted\n```")
        screen.expect(FOOTER)
        screen.prompt("/push feature/chat")
        screen.expect(r"approve PUSH")
        screen.expect(r"push \w{12} to\s[\s\S]*?\sas branch feature/chat")
        screen.expect(r"\[o\]nce .*\[p\]ark › ")
        child.send("o")
        screen.expect(r"Pushed branch feature/chat")
        screen.prompt("/quit")
        assert child.wait(timeout=20) == 0
    finally:
        child.close()
        await serve.stop()
    assert git("--git-dir", str(origin.bare), "show", "feature/chat:NOTES.md") == "chatted"
