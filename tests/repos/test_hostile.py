"""A hostile repository and a hostile agent: Blitz's git runs nothing either controls,
follows no link, fetches no submodule it was not allowed to."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from repos.conftest import MakeRepos
from support.git_servers import Gitlink, GitServers, Link, entries, run_git

from blitz.repos import RepoError, Repositories, Source

SID = "s_deadbeefdeadbeefdeadbeefdeadbeef"

HOOKS = (
    "pre-commit",
    "post-commit",
    "post-checkout",
    "pre-push",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "fsmonitor-watchman",
    "post-merge",
    "pre-receive",
)


def plant(ws: Path, markers: Path) -> None:
    """What an agent could write to make a git that reads the workspace's `.git` run
    something: hooks, and config naming commands, with attributes that name a filter
    and a diff driver for every file. Each would touch a file in `markers`."""
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in HOOKS:
        script = hooks / hook
        script.write_text(f"#!/bin/sh\ntouch {markers}/hook-{hook}\n")
        script.chmod(0o755)
    config = ws / ".git" / "config"
    settings = {
        "core.hooksPath": str(hooks),
        "core.fsmonitor": f"touch {markers}/fsmonitor; false",
        "core.pager": f"touch {markers}/pager; cat",
        "core.sshCommand": f"touch {markers}/ssh",
        "core.gitProxy": f"touch {markers}/proxy",
        "core.askPass": f"touch {markers}/askpass",
        "core.editor": f"touch {markers}/editor",
        "filter.x.clean": f"touch {markers}/clean; cat",
        "filter.x.smudge": f"touch {markers}/smudge; cat",
        "filter.x.process": f"touch {markers}/process",
        "diff.x.textconv": f"touch {markers}/textconv; cat",
        "diff.x.command": f"touch {markers}/diffcommand",
        "diff.external": f"touch {markers}/external",
        "alias.diff": f"!touch {markers}/alias",
        "credential.helper": f"!touch {markers}/credential",
        "uploadpack.packObjectsHook": f"touch {markers}/packhook",
        "remote.origin.url": f"ext::sh -c touch% {markers}/ext",
    }
    for key, value in settings.items():
        run_git("config", "--file", str(config), key, value, home=ws.parent)
    (ws / ".gitattributes").write_text("* filter=x diff=x\n")


def nested_repo(ws: Path, markers: Path) -> Path:
    """A repository inside the workspace, as the agent could make one, whose own config
    runs a clean filter on its files (a `git status` inside it would run it)."""
    nested = ws / "vendor" / "lib"
    nested.mkdir(parents=True)
    run_git("init", "-q", home=ws.parent, cwd=nested)
    (nested / "data.txt").write_text("aaaa\n")
    run_git("add", "data.txt", home=ws.parent, cwd=nested)
    run_git("commit", "-qm", "nested", home=ws.parent, cwd=nested)
    run_git(
        "config", "filter.y.clean", f"touch {markers}/nested-clean; cat", home=ws.parent, cwd=nested
    )
    run_git(
        "config",
        "core.fsmonitor",
        f"touch {markers}/nested-fsmonitor; false",
        home=ws.parent,
        cwd=nested,
    )
    (nested / ".gitattributes").write_text("* filter=y\n")
    return nested


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


async def test_nothing_the_workspace_or_repository_configures_is_run(
    repos: Repositories, git_servers: GitServers, workspace: Path, markers: Path
) -> None:
    git_servers.make_repo(
        "app",
        {
            "README.md": "hello\n",
            ".gitattributes": "*.md filter=x diff=x\n",
            "src/a.py": "a = 1\n",
        },
    )
    url = git_servers.http_url("app")
    await repos.clone(SID, Source(url=url), workspace)
    plant(workspace, markers)
    nested = nested_repo(workspace, markers)
    (workspace / "README.md").write_text("hello, changed\n")
    await repos.snapshot(SID, workspace, turn_id="t_1", message="One")
    # Same size, new content: a `git status` in the nested repository would hash it
    # through its clean filter.
    (nested / "data.txt").write_text("bbbb\n")
    (workspace / "src" / "a.py").write_text("a = 2\n")
    await repos.snapshot(SID, workspace, turn_id="t_2", message="Two")
    (workspace / "src" / "a.py").write_text("a = 3\n")

    diff = await repos.diff(SID, workspace)
    assert "+hello, changed" in diff.diff  # the text itself, no textconv
    await repos.diff(SID, workspace, turn_id="t_2")
    for fmt in ("patch", "diff", "bundle"):
        await repos.export(SID, workspace, format=fmt)
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    await repos.push(SID, plan)
    assert git_servers.rev("app", "refs/heads/topic") == plan.commit

    assert entries(markers) == []
    assert "vendor/lib" in diff.paths  # the nested repository as a submodule entry


async def test_a_symlink_is_a_link_never_what_it_points_at(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    git_servers.make_repo("app", {"README.md": "hi\n", "passwd": Link("/etc/passwd")})
    await repos.clone(SID, Source(url=git_servers.git_url("app")), workspace)
    assert os.readlink(workspace / "passwd") == "/etc/passwd"
    os.symlink("/etc/hostname", workspace / "host")
    os.symlink("../../../../etc/shadow", workspace / "shadow")
    got = await repos.diff(SID, workspace)
    assert "new file mode 120000" in got.diff and "+/etc/hostname" in got.diff
    assert "+../../../../etc/shadow" in got.diff
    passwd_line = "root:x:0:0:"  # the first line of /etc/passwd begins so
    exported = await repos.export(SID, workspace, format="diff")
    assert passwd_line.encode() not in exported.data
    assert passwd_line not in got.diff
    assert sorted(got.paths) == ["host", "shadow"]


async def test_a_repository_with_a_dot_git_tree_is_refused_at_the_fetch(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    git_servers.make_repo("evil", {"README.md": "hi\n"})
    blob = git_servers.git("evil", "hash-object", "-w", "--stdin", input=b"[core]\n").strip()
    inner = git_servers.git("evil", "mktree", input=f"100644 blob {blob}\tconfig\n".encode())
    tree = git_servers.git(
        "evil", "mktree", input=f"040000 tree {inner.strip()}\t.git\n".encode()
    ).strip()
    commit = git_servers.git("evil", "commit-tree", tree, "-m", "evil").strip()
    git_servers.git("evil", "update-ref", "refs/heads/main", commit)
    with pytest.raises(RepoError) as caught:
        await repos.clone(SID, Source(url=git_servers.file_url("evil")), workspace)
    assert caught.value.kind == "failed"
    assert "dotgit" in str(caught.value).lower() or "fsck" in str(caught.value)
    assert entries(workspace) == []


def superproject(servers: GitServers, tmp_path: Path) -> str:
    """A repository with four submodules: one served and allowed (`lib`), one outside
    the allowed folder, `/etc`, and an `ext::` command."""
    lib = servers.make_repo("lib", {"lib.txt": "the library\n"})
    lib_commit = servers.rev("lib", "main")
    outside = GitServers(tmp_path / "elsewhere")
    outside.make_repo("secret", {"secret.txt": "secret\n"})
    gitmodules = (
        '[submodule "lib"]\n\tpath = lib\n\turl = ../lib.git\n'
        f'[submodule "outside"]\n\tpath = outside\n\turl = {outside.file_url("secret")}\n'
        '[submodule "etc"]\n\tpath = etc\n\turl = file:///etc\n'
        '[submodule "ext"]\n\tpath = ext\n\turl = ext::sh -c touch% /tmp/blitz-ext-marker\n'
        '[submodule "escape"]\n\tpath = ../escape\n\turl = ../lib.git\n'
    )
    servers.make_repo(
        "super",
        {
            "README.md": "super\n",
            ".gitmodules": gitmodules,
            "lib": Gitlink(lib_commit),
            "outside": Gitlink(outside.rev("secret", "main")),
            "etc": Gitlink(lib_commit),
            "ext": Gitlink(lib_commit),
        },
    )
    assert lib.is_dir()
    return lib_commit


async def test_submodules_are_never_fetched_unless_asked(
    repos: Repositories, git_servers: GitServers, workspace: Path, tmp_path: Path
) -> None:
    superproject(git_servers, tmp_path)
    cloned = await repos.clone(SID, Source(url=git_servers.git_url("super")), workspace)
    assert cloned.notices == ()
    for name in ("lib", "outside", "etc", "ext"):
        assert entries(workspace / name) == []
    assert not (tmp_path.parent / "escape").exists()


async def test_only_allowed_submodules_are_fetched(
    repos: Repositories, git_servers: GitServers, workspace: Path, tmp_path: Path
) -> None:
    lib_commit = superproject(git_servers, tmp_path)
    source = Source(url=git_servers.git_url("super"), submodules=True)
    cloned = await repos.clone(SID, source, workspace)
    assert (workspace / "lib" / "lib.txt").read_text() == "the library\n"
    head = run_git("rev-parse", "HEAD", home=tmp_path, cwd=workspace / "lib")
    assert head.stdout.decode().strip() == lib_commit
    for name in ("outside", "etc", "ext"):
        assert entries(workspace / name) == [], name
    said = " ".join(cloned.notices)
    for name in ("outside", "etc", "ext", "escape"):
        assert f"'{name}'" in said, said
    assert "blitz-ext-marker" not in entries(Path("/tmp"))
    assert not (tmp_path.parent / "escape").exists()
    # The submodule at its recorded commit is no change.
    assert (await repos.diff(SID, workspace)).paths == []


async def test_a_link_inside_an_allowed_folder_cannot_lead_out(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path, tmp_path: Path
) -> None:
    outside = GitServers(tmp_path / "elsewhere")
    outside.make_repo("secret", {"secret.txt": "secret\n"})
    os.symlink(outside.path("secret"), git_servers.root / "innocent.git")
    repos = make_repos()
    from blitz.repos import SourceRefused

    with pytest.raises(SourceRefused) as caught:
        await repos.clone(SID, Source(url=git_servers.file_url("innocent")), workspace)
    assert caught.value.field == "source.url"
    assert entries(workspace) == []


async def test_files_git_cannot_read_are_left_out_not_fatal(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    """A fifo, and a repository inside without a commit, never fail a snapshot."""
    git_servers.make_repo("app", {"README.md": "hi\n"})
    await repos.clone(SID, Source(url=git_servers.git_url("app")), workspace)
    os.mkfifo(workspace / "pipe")
    (workspace / "empty-repo").mkdir()
    run_git("init", "-q", home=workspace.parent, cwd=workspace / "empty-repo")
    (workspace / "real.txt").write_text("real\n")
    assert await repos.snapshot(SID, workspace, turn_id="t_1", message="x") is not None
    got = await repos.diff(SID, workspace, turn_id="t_1")
    assert got.paths == ["real.txt"]
    assert stat.S_ISFIFO(os.lstat(workspace / "pipe").st_mode)
