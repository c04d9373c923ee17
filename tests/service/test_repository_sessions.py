"""Sessions from a repository, end to end: a real server, real clients, real git.

A bare repository made here is the origin (`file://`, allowed by `--repo-allow`); the
server clones it at a branch, a tag or a commit, a turn of the demo agent changes, adds,
renames and deletes files with its file tools and its commands, and the session's diff,
each turn's diff, the exported patch series (applied with `git am` to the original
commit), the diff (`git apply`), the bundle (`git bundle verify`) and the approved push
(the branch lands in the origin; a denied one leaves it untouched) are checked against
git itself. Forks and rewinds keep the repository; another principal can neither export
nor push a session that is not theirs; both store engines.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from support.in_process import in_process
from support.wire import Wire, decide, drive, follow_until_finished, open_wire

from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError

# The turn: every kind of change, by the file tools and by commands.
CHANGES = """write NOTES.md
```
Notes from the turn.
```
edit src/app.py
```
return 1
```
```
return 2
```
$ mv docs/old.md docs/new.md
$ rm data.txt && mkdir -p build && echo junk > build/out.o
"""


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@dataclass
class Origin:
    bare: Path
    url: str
    main: str  # main's commit
    tag: str  # the commit v1 names
    dev: str  # dev's commit


def make_origin(root: Path) -> Origin:
    """A bare repository with main (two commits, tag v1 on the first) and dev."""
    bare = root / "origins" / "api.git"
    git("init", "--bare", "--initial-branch=main", str(bare))
    seed = root / "seed"
    git("clone", str(bare), str(seed))
    (seed / "src").mkdir()
    (seed / "docs").mkdir()
    (seed / "src" / "app.py").write_text("def answer():\n    return 1\n")
    (seed / "docs" / "old.md").write_text("# Old\n\nA document that will move.\n" * 5)
    (seed / "data.txt").write_text("to be deleted\n")
    (seed / ".gitignore").write_text("build/\n")
    git("add", "-A", cwd=seed)
    git("commit", "-m", "first", cwd=seed)
    git("tag", "v1", cwd=seed)
    (seed / "README.md").write_text("# API\n")
    git("add", "-A", cwd=seed)
    git("commit", "-m", "second", cwd=seed)
    git("checkout", "-b", "dev", cwd=seed)
    (seed / "DEV.md").write_text("dev only\n")
    git("add", "-A", cwd=seed)
    git("commit", "-m", "dev", cwd=seed)
    git("push", "origin", "main", "dev", "--tags", cwd=seed)
    return Origin(
        bare=bare,
        url=f"file://{bare}",
        main=git("rev-parse", "main", cwd=bare),
        tag=git("rev-parse", "v1^{commit}", cwd=bare),
        dev=git("rev-parse", "dev", cwd=bare),
    )


@pytest.fixture
def origin(tmp_path: Path) -> Origin:
    return make_origin(tmp_path)


@pytest.fixture
def repo_settings(settings: Settings, tmp_path: Path) -> Settings:
    return replace(
        settings,
        repo_allow=(f"file://{tmp_path}/origins/*",),
        repo_dir=tmp_path / "data" / "repos",
        approval_timeout=0,
    )


@pytest.fixture
async def wire(repo_settings: Settings) -> AsyncIterator[Wire]:
    """A client of a server in this process that allows the test's origins."""
    async with in_process(repo_settings) as client:
        yield client


async def changed_session(wire: Wire, origin: Origin) -> tuple[s.Session, str]:
    """A session from main, after the turn of CHANGES (every approval given once)."""
    session = await wire.create_session(source=s.RepositorySource(url=origin.url, ref="main"))
    events = await drive(wire, session.id, CHANGES, decide(wire, session.id, "once"))
    finished = events[-1].finished
    assert not finished.HasField("error"), finished.error
    return session, events[-1].turn_id


async def last_seq(wire: Wire, session_id: str) -> int:
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session_id))
    return int(got.last_seq)


async def export(
    wire: Wire, session_id: str, fmt: int, **fields: object
) -> w.ExportChangesResponse:
    request = w.ExportChangesRequest(session_id=session_id, format=fmt, **fields)  # type: ignore[arg-type]
    return await wire.call("ExportChanges", request)


@pytest.mark.engines("sqlite", "postgres")
async def test_a_session_starts_from_a_branch_and_says_at_which_commit(
    repo_settings: Settings, origin: Origin
) -> None:
    async with running_server(repo_settings) as server:
        wire = open_wire("grpc", server)
        try:
            info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
            assert info.repositories
            session = await wire.create_session(
                source=s.RepositorySource(url=origin.url, ref="main")
            )
            repository = session.repository
            assert (repository.url, repository.ref) == (origin.url, "main")
            assert (repository.commit, repository.branch) == (origin.main, "main")
            assert repository.default_branch == "main"
            read = await wire.call(
                "ReadFile", w.ReadFileRequest(session_id=session.id, path="README.md")
            )
            assert read.content == b"# API\n"
            again = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
            assert again.repository == repository
            watch = wire.stream("Watch", s.WatchRequest(session_id=session.id))
            notices = [e.notice.text async for e in watch if e.HasField("notice")]
            assert any(origin.main in text for text in notices)
            # The workspace is a clone an agent can use: history, and the origin's URL.
            folder = repo_settings.workspace_root / session.workspace
            assert git("rev-parse", "HEAD", cwd=folder) == origin.main
            assert git("remote", "get-url", "origin", cwd=folder) == origin.url
        finally:
            await wire.close()


async def test_a_tag_and_a_commit_and_a_shallow_clone(
    wire: Wire, repo_settings: Settings, origin: Origin
) -> None:
    tagged = await wire.create_session(source=s.RepositorySource(url=origin.url, ref="v1"))
    assert tagged.repository.commit == origin.tag
    at_commit = await wire.create_session(source=s.RepositorySource(url=origin.url, ref=origin.dev))
    assert (at_commit.repository.commit, at_commit.repository.branch) == (origin.dev, "")
    shallow = await wire.create_session(
        source=s.RepositorySource(url=origin.url, ref="dev", depth=1)
    )
    assert shallow.repository.commit == origin.dev
    folder = repo_settings.workspace_root / shallow.workspace
    assert git("rev-list", "--count", "HEAD", cwd=folder) == "1"


async def test_the_diff_against_the_start_and_per_turn(
    repo_settings: Settings, origin: Origin, tmp_path: Path
) -> None:
    async with running_server(repo_settings) as server:
        wire = open_wire("connect", server)
        try:
            session, first = await changed_session(wire, origin)
            got = await wire.call("GetDiff", w.GetDiffRequest(session_id=session.id))
            assert got.base == origin.main
            diff = got.diff
            assert "rename from docs/old.md\nrename to docs/new.md" in diff
            assert "+Notes from the turn." in diff  # a file tool's new file
            assert "-    return 1\n+    return 2" in diff  # an edit
            assert "deleted file mode" in diff and "data.txt" in diff  # a command's delete
            assert "build/out.o" not in diff  # ignored, as git ignores it
            assert set(got.paths) >= {"NOTES.md", "src/app.py", "docs/new.md", "data.txt"}
            # A second turn: its own diff holds its change only.
            events = await drive(
                wire, session.id, "$ echo more >> README.md", decide(wire, session.id, "once")
            )
            second = events[-1].turn_id
            one = await wire.call(
                "GetDiff", w.GetDiffRequest(session_id=session.id, turn_id=second)
            )
            assert one.paths == ["README.md"] and "+more" in one.diff
            before = await wire.call(
                "GetDiff", w.GetDiffRequest(session_id=session.id, turn_id=first)
            )
            assert "README.md" not in before.paths and "src/app.py" in before.paths
            with pytest.raises(BlitzError) as refused:
                await wire.call("GetDiff", w.GetDiffRequest(session_id=session.id, turn_id="nope"))
            assert refused.value.reason == "TURN_NOT_FOUND"
        finally:
            await wire.close()


async def test_the_patch_series_applies_with_git_am_and_the_bundle_verifies(
    wire: Wire, repo_settings: Settings, origin: Origin, tmp_path: Path
) -> None:
    session, _ = await changed_session(wire, origin)
    await drive(wire, session.id, "$ echo more >> README.md", decide(wire, session.id, "once"))
    patch = await export(wire, session.id, w.EXPORT_FORMAT_PATCH)
    assert patch.base == origin.main and len(patch.commits) == 2
    assert patch.file_name.endswith(".patch")
    check = tmp_path / "check"
    git("clone", "--quiet", str(origin.bare), str(check))
    git("checkout", "--quiet", origin.main, cwd=check)
    (tmp_path / "x.patch").write_bytes(patch.data)
    git("am", str(tmp_path / "x.patch"), cwd=check)
    workspace = repo_settings.workspace_root / session.workspace
    for name in ("NOTES.md", "src/app.py", "docs/new.md", "README.md"):
        assert (check / name).read_bytes() == (workspace / name).read_bytes()
    assert not (check / "data.txt").exists() and not (check / "docs" / "old.md").exists()
    # One diff, for git apply.
    single = await export(wire, session.id, w.EXPORT_FORMAT_DIFF)
    fresh = tmp_path / "fresh"
    git("clone", "--quiet", str(origin.bare), str(fresh))
    (tmp_path / "x.diff").write_bytes(single.data)
    git("apply", "--index", str(tmp_path / "x.diff"), cwd=fresh)
    assert (fresh / "NOTES.md").read_text() == "Notes from the turn.\n"
    # A bundle of a branch: verified, and fetched, by a clone that has the start.
    bundle = await export(wire, session.id, w.EXPORT_FORMAT_BUNDLE, branch="review/x")
    (tmp_path / "x.bundle").write_bytes(bundle.data)
    git("bundle", "verify", str(tmp_path / "x.bundle"), cwd=fresh)
    git("fetch", "--quiet", str(tmp_path / "x.bundle"), "review/x:review/x", cwd=fresh)
    assert git("rev-parse", "review/x", cwd=fresh) == bundle.commits[-1]
    # Squashed: one commit with the message given.
    squashed = await export(
        wire, session.id, w.EXPORT_FORMAT_PATCH, squash=True, message="All of it"
    )
    assert len(squashed.commits) == 1 and b"Subject: [PATCH] All of it" in squashed.data


async def test_a_push_lands_only_once_approved(repo_settings: Settings, origin: Origin) -> None:
    async with running_server(repo_settings) as server:
        wire = open_wire("grpc", server)
        try:
            session, _ = await changed_session(wire, origin)
            # Denied: nothing reaches the origin, and the turn says why.
            seen = await last_seq(wire, session.id)
            started = await export(wire, session.id, w.EXPORT_FORMAT_PUSH, branch="feature/x")
            assert (started.branch, started.remote) == ("feature/x", origin.url)
            events = await follow_until_finished(
                wire, session.id, seen, on_request=decide(wire, session.id, "deny")
            )
            asked = next(e.approval_request for e in events if e.HasField("approval_request"))
            assert asked.kind == t.ACTION_KIND_PUSH
            assert asked.scope_label == f"push: {origin.url} feature/x"
            assert "+Notes from the turn." in asked.diff
            assert events[-1].finished.error.reason == "PUSH_DENIED"
            assert "feature/x" not in git("branch", "--list", cwd=origin.bare)
            # Approved: the branch is the commit the approval named.
            seen = await last_seq(wire, session.id)
            started = await export(wire, session.id, w.EXPORT_FORMAT_PUSH, branch="feature/x")
            events = await follow_until_finished(
                wire, session.id, seen, on_request=decide(wire, session.id, "once")
            )
            finished = events[-1].finished
            assert not finished.HasField("error"), finished.error
            landed = git("rev-parse", "feature/x", cwd=origin.bare)
            assert landed == started.commits[-1] and landed in finished.output
            # The default branch is refused, whoever asks.
            with pytest.raises(BlitzError) as refused:
                await export(wire, session.id, w.EXPORT_FORMAT_PUSH, branch="main")
            assert refused.value.metadata["field"] == "branch"
            # /push in a chat does the same.
            events = await drive(
                wire,
                session.id,
                "/push feature/y\nOne commit",
                decide(wire, session.id, "once"),
                command=True,
            )
            assert "feature/y" in events[-1].finished.output
            assert git("log", "-1", "--format=%s", "feature/y", cwd=origin.bare) == "One commit"
        finally:
            await wire.close()


async def test_sources_outside_the_allow_list_are_refused(
    wire: Wire, origin: Origin, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.git"
    git("clone", "--bare", "--quiet", str(origin.bare), str(elsewhere))
    cases = {
        f"file://{elsewhere}": "source.url",
        "ssh://git@example.com/acme/api.git": "source.url",
        "https://user:secret@example.com/acme/api.git": "source.url",
        "ext::sh -c touch% /tmp/pwned": "source.url",
    }
    for url, field in cases.items():
        with pytest.raises(BlitzError) as refused:
            await wire.create_session(source=s.RepositorySource(url=url))
        assert refused.value.reason == "INVALID_ARGUMENT"
        assert refused.value.metadata["field"] == field
        assert "secret" not in str(refused.value)
    with pytest.raises(BlitzError) as refused:
        await wire.create_session(source=s.RepositorySource(url=origin.url, ref="no-such-branch"))
    assert refused.value.metadata["field"] == "source.ref"
    with pytest.raises(BlitzError) as refused:
        await wire.create_session(workspace="mine", source=s.RepositorySource(url=origin.url))
    assert refused.value.metadata["field"] == "workspace"
    # Nothing was left behind by the refusals.
    listed = await wire.call("ListSessions", s.ListSessionsRequest())
    assert not listed.sessions


async def test_a_plain_session_has_per_turn_diffs_but_nothing_to_export(wire: Wire) -> None:
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "write a.txt\n```\none\n```\n$ cp a.txt b.txt",
        decide(wire, session.id, "once"),
    )
    got = await wire.call(
        "GetDiff", w.GetDiffRequest(session_id=session.id, turn_id=events[-1].turn_id)
    )
    assert got.paths == ["a.txt", "b.txt"] and "+one" in got.diff and not got.base
    with pytest.raises(BlitzError) as refused:
        await export(wire, session.id, w.EXPORT_FORMAT_PATCH)
    assert refused.value.metadata["field"] == "session_id"


async def test_forks_and_rewinds_keep_the_repository(
    wire: Wire, repo_settings: Settings, origin: Origin
) -> None:
    session, first = await changed_session(wire, origin)
    await drive(wire, session.id, "$ echo more >> README.md", decide(wire, session.id, "once"))
    fork = await wire.call(
        "ForkSession", s.ForkSessionRequest(session_id=session.id, turn_id=first)
    )
    assert fork.repository == session.repository
    forked = await export(wire, fork.id, w.EXPORT_FORMAT_PATCH)
    assert len(forked.commits) == 1 and b"more" not in forked.data
    rewound = await wire.call(
        "RewindSession", s.RewindSessionRequest(session_id=session.id, to_turn_id=first, files=True)
    )
    assert rewound.rewound.files
    after = await export(wire, session.id, w.EXPORT_FORMAT_PATCH)
    assert len(after.commits) == 1 and b"+more" not in after.data


async def test_another_principal_can_neither_export_nor_push(
    repo_settings: Settings, origin: Origin
) -> None:
    settings = replace(repo_settings, tokens="alice:alice-token-1234,bob:bob-token-5678")
    async with running_server(settings) as server:
        alice = open_wire("grpc", server, {"authorization": "Bearer alice-token-1234"})
        bob = open_wire("connect", server, {"authorization": "Bearer bob-token-5678"})
        try:
            session, _ = await changed_session(alice, origin)
            for fmt in (w.EXPORT_FORMAT_PATCH, w.EXPORT_FORMAT_BUNDLE, w.EXPORT_FORMAT_PUSH):
                with pytest.raises(BlitzError) as refused:
                    await export(bob, session.id, fmt, branch="feature/bob")
                assert refused.value.reason == "SESSION_NOT_FOUND"
            with pytest.raises(BlitzError):
                await bob.call("GetDiff", w.GetDiffRequest(session_id=session.id))
            assert "feature/bob" not in git("branch", "--list", cwd=origin.bare)
        finally:
            await alice.close()
            await bob.close()


async def test_a_push_is_shown_to_the_sessions_pre_tool_hooks(wire: Wire, origin: Origin) -> None:
    """A policy hook sees a /push as it sees an agent's action: its deny refuses the push
    with its reason and asks no one; its allow pushes without asking."""
    session, _ = await changed_session(wire, origin)
    deny = 'cat >/dev/null; echo "pushes wait for the review bot" >&2; exit 2'
    made = await wire.call(
        "CreateHook",
        hk.CreateHookRequest(event=hk.HOOK_EVENT_PRE_TOOL, command=deny, tools=["push"]),
    )
    seen = await last_seq(wire, session.id)
    await export(wire, session.id, w.EXPORT_FORMAT_PUSH, branch="feature/hooked")
    events = await follow_until_finished(wire, session.id, seen)
    assert not any(e.HasField("approval_request") for e in events)
    hooked = next(e.hook for e in events if e.HasField("hook"))
    assert (hooked.hook_id, hooked.decision) == (made.hook.id, t.HOOK_DECISION_DENY)
    finished = events[-1].finished
    assert finished.error.reason == "PUSH_DENIED"
    assert "pushes wait for the review bot" in finished.error.message
    assert "feature/hooked" not in git("branch", "--list", cwd=origin.bare)

    allow = 'cat >/dev/null; echo \'{"decision": "approve"}\''
    update = hk.UpdateHookRequest(
        hook_id=made.hook.id, command=allow, update_mask=FieldMask(paths=["command"])
    )
    await wire.call("UpdateHook", update)
    seen = await last_seq(wire, session.id)
    started = await export(wire, session.id, w.EXPORT_FORMAT_PUSH, branch="feature/hooked")
    events = await follow_until_finished(wire, session.id, seen)
    assert not any(e.HasField("approval_request") for e in events)
    assert not events[-1].finished.HasField("error"), events[-1].finished.error
    assert git("rev-parse", "feature/hooked", cwd=origin.bare) == started.commits[-1]
