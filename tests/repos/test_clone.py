"""Clones: at a branch, a tag or a commit, with depth, over git://, http:// and file://;
the workspace an ordinary repository; failures sorted and cleaned up after."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from repos.conftest import MakeRepos
from support.git_servers import GitServers, entries, run_git

from blitz.repos import Credential, RepoError, Repositories, Source

SID = "s_0123456789abcdef0123456789abcdef"


def ws_git(workspace: Path, *args: str) -> str:
    return run_git(*args, home=workspace.parent, cwd=workspace).stdout.decode().strip()


def history(servers: GitServers) -> dict[str, str]:
    """A repository `app` with three commits on main, a branch `feature`, tags."""
    servers.make_repo("app", {"README.md": "one\n"})
    first = servers.rev("app", "main")
    servers.commit("app", {"README.md": "two\n", "src/app.py": "print('hi')\n"})
    servers.commit("app", {"README.md": "three\n"})
    feature = servers.commit("app", {"feature.txt": "new\n"}, branch="feature")
    servers.tag("app", "v1", first)
    servers.tag("app", "v1-annotated", first, annotated=True)
    return {"first": first, "main": servers.rev("app", "main"), "feature": feature}


async def test_clone_of_the_default_branch_is_an_ordinary_repository(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    commits = history(git_servers)
    url = git_servers.git_url("app")
    cloned = await repos.clone(SID, Source(url=url), workspace)
    assert (cloned.commit, cloned.ref, cloned.branch, cloned.default_branch) == (
        commits["main"],
        "",
        "main",
        "main",
    )
    assert (workspace / "README.md").read_text() == "three\n"
    assert ws_git(workspace, "rev-parse", "HEAD") == commits["main"]
    assert ws_git(workspace, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert ws_git(workspace, "remote", "get-url", "origin") == url
    assert len(ws_git(workspace, "log", "--oneline").splitlines()) == 3
    assert ws_git(workspace, "status", "--porcelain") == ""
    assert repos.has(SID)


async def test_clone_at_a_branch_checks_out_that_branch(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    commits = history(git_servers)
    cloned = await repos.clone(
        SID, Source(url=git_servers.http_url("app"), ref="feature"), workspace
    )
    assert (cloned.commit, cloned.branch, cloned.default_branch) == (
        commits["feature"],
        "feature",
        "main",
    )
    assert (workspace / "feature.txt").read_text() == "new\n"
    assert ws_git(workspace, "symbolic-ref", "HEAD") == "refs/heads/feature"


@pytest.mark.parametrize("tag", ["v1", "v1-annotated", "refs/tags/v1"])
async def test_clone_at_a_tag_is_detached_at_its_commit(
    repos: Repositories, git_servers: GitServers, workspace: Path, tag: str
) -> None:
    commits = history(git_servers)
    cloned = await repos.clone(SID, Source(url=git_servers.file_url("app"), ref=tag), workspace)
    assert (cloned.commit, cloned.branch) == (commits["first"], "")
    assert ws_git(workspace, "rev-parse", "HEAD") == commits["first"]
    assert (workspace / "README.md").read_text() == "one\n"
    assert hard_linked(workspace) == []  # a local source is copied, never linked


def hard_linked(root: Path) -> list[Path]:
    """Files under `root`, `.git` included, with more than one link."""
    return [
        p for p in root.rglob("*") if not p.is_symlink() and p.is_file() and p.stat().st_nlink > 1
    ]


@pytest.mark.parametrize("scheme", ["git", "http", "file"])
async def test_clone_at_a_commit_id_fetches_that_commit(
    repos: Repositories, git_servers: GitServers, workspace: Path, scheme: str
) -> None:
    """Protocol v2 serves a commit no ref points at; depth keeps only it."""
    commits = history(git_servers)
    middle = git_servers.rev("app", "main~1")
    url = getattr(git_servers, f"{scheme}_url")("app")
    cloned = await repos.clone(SID, Source(url=url, ref=middle, depth=1), workspace)
    assert (cloned.commit, cloned.branch) == (middle, "")
    assert (workspace / "README.md").read_text() == "two\n"
    assert ws_git(workspace, "log", "--format=%H").splitlines() == [middle]
    assert commits["main"] != middle


async def test_clone_at_an_abbreviated_commit_id_resolves_it(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    commits = history(git_servers)
    cloned = await repos.clone(
        SID, Source(url=git_servers.git_url("app"), ref=commits["first"][:10]), workspace
    )
    assert cloned.commit == commits["first"]


async def test_clone_with_depth_keeps_that_much_history(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    history(git_servers)
    await repos.clone(SID, Source(url=git_servers.git_url("app"), depth=2), workspace)
    assert len(ws_git(workspace, "log", "--oneline").splitlines()) == 2
    assert ws_git(workspace, "rev-parse", "--is-shallow-repository") == "true"


async def test_a_missing_ref_is_ref_not_found_and_leaves_nothing(
    repos: Repositories, git_servers: GitServers, workspace: Path, repo_settings: object
) -> None:
    history(git_servers)
    for ref in ("no-such-branch", "0" * 40):
        with pytest.raises(RepoError) as caught:
            await repos.clone(SID, Source(url=git_servers.git_url("app"), ref=ref), workspace)
        assert caught.value.kind == "ref_not_found", caught.value
        assert entries(workspace) == []
        assert not repos.has(SID)


async def test_a_missing_repository_is_unreachable(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    for url in (git_servers.git_url("nothing"), git_servers.file_url("nothing")):
        with pytest.raises(RepoError) as caught:
            await repos.clone(SID, Source(url=url), workspace)
        assert caught.value.kind == "unreachable", caught.value
    assert entries(workspace) == []


async def test_a_clone_past_the_size_bound_is_too_large_and_leaves_the_workspace_empty(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path, tmp_path: Path
) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB that does not compress away
    git_servers.make_repo("big", {f"blob{i}.bin": big[i:] + big[:i] for i in range(4)})
    repos = make_repos(max_size=2 << 20)
    with pytest.raises(RepoError) as caught:
        await repos.clone(SID, Source(url=git_servers.file_url("big")), workspace)
    assert caught.value.kind == "too_large"
    assert entries(workspace) == []
    assert entries(tmp_path / "repo-data") == [".home"]


async def test_a_workspace_that_is_not_empty_is_refused_and_left_alone(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    history(git_servers)
    (workspace / "mine.txt").write_text("keep me")
    with pytest.raises(RepoError):
        await repos.clone(SID, Source(url=git_servers.git_url("app")), workspace)
    assert (workspace / "mine.txt").read_text() == "keep me"


async def test_http_credentials_reach_git_through_the_helper_only(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path
) -> None:
    history(git_servers)
    url = git_servers.http_url("app")
    prefix = url.rsplit("/", 1)[0] + "/"
    credential = Credential(prefix, git_servers.http_user, git_servers.http_password)
    repos = make_repos(credentials=(credential,))
    await repos.clone(SID, Source(url=url), workspace)
    assert any(auth for _, _, auth in git_servers.requests)
    config = (workspace / ".git" / "config").read_text()
    assert git_servers.http_password not in config
    assert git_servers.http_user not in config
    assert ws_git(workspace, "remote", "get-url", "origin") == url


async def test_credentials_go_only_to_their_principals(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path
) -> None:
    history(git_servers)
    url = git_servers.http_url("app")
    credential = Credential(
        url, git_servers.http_user, git_servers.http_password, principals=("alice",)
    )
    repos = make_repos(credentials=(credential,))
    with pytest.raises(RepoError) as caught:
        await repos.clone(SID, Source(url=url), workspace, principal="mallory")
    assert caught.value.kind == "unreachable"
    cloned = await repos.clone(SID, Source(url=url), workspace, principal="alice")
    assert cloned.branch == "main"


async def test_a_refused_password_never_shows_in_the_error(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path
) -> None:
    history(git_servers)
    url = git_servers.http_url("app")
    wrong = "wrong-password-that-is-long-9f8e7d"
    repos = make_repos(credentials=(Credential(url, git_servers.http_user, wrong),))
    git_servers.refuse_next = 1
    with pytest.raises(RepoError) as caught:
        await repos.clone(SID, Source(url=url), workspace)
    assert caught.value.kind == "unreachable"
    message = str(caught.value)
    assert message
    assert wrong not in message and git_servers.http_password not in message
    assert entries(workspace) == []


async def test_credentials_are_in_no_argument_and_only_in_the_remote_processes_environment(
    repos: Repositories,
    git_servers: GitServers,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history(git_servers)
    started: list[tuple[tuple[str, ...], dict[str, str]]] = []
    original = asyncio.create_subprocess_exec

    async def recording(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        started.append((tuple(str(a) for a in args), dict(kwargs.get("env") or {})))
        return await original(*args, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recording)
    await repos.clone(SID, Source(url=git_servers.http_url("app")), workspace)
    (workspace / "x").write_text("x\n")
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    await repos.push(SID, plan)
    password = git_servers.http_password
    assert all(password not in " ".join(argv) for argv, _ in started)
    given = [argv for argv, env in started if password in env.values()]
    assert {next(w for w in argv if w in ("ls-remote", "clone", "push")) for argv in given} == {
        "ls-remote",
        "clone",
        "push",
    }
    assert all(env.keys() <= ALLOWED_ENV for _, env in started)


ALLOWED_ENV = {
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_ATTR_NOSYSTEM",
    "GIT_TERMINAL_PROMPT",
    "GIT_OPTIONAL_LOCKS",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_CEILING_DIRECTORIES",
    "LC_ALL",
    "GIT_INDEX_FILE",
    "GIT_LITERAL_PATHSPECS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "BLITZ_GIT_PROTOCOL",
    "BLITZ_GIT_HOST",
    "BLITZ_GIT_USERNAME",
    "BLITZ_GIT_PASSWORD",
}


async def test_a_server_that_never_answers_is_a_timeout_and_git_is_killed(
    make_repos: MakeRepos, workspace: Path
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        repos = make_repos(timeout=1.0)
        url = f"git://127.0.0.1:{port}/silent.git"
        with pytest.raises(RepoError) as caught:
            await repos.clone(SID, Source(url=url), workspace)
    assert caught.value.kind == "timeout"
    assert entries(workspace) == []
    assert running_with(f"127.0.0.1:{port}") == []


def running_with(text: str) -> list[int]:
    """Live processes whose command line holds `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
