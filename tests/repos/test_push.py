"""Pushes: prepared, then sent as a new branch, never forced, never to the default
branch unless allowed, with the operator's credential over HTTP."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from repos.conftest import MakeRepos
from support.git_servers import GitServers

from blitz.repos import PushPlan, RepoError, Repositories, Source, SourceRefused

SID = "s_a1b2c3d4e5f60718293a4b5c6d7e8f90"


def origin_repo(servers: GitServers) -> None:
    servers.make_repo("app", {"README.md": "hello\n", "src/a.py": "a = 1\n"})


async def changed_clone(repos: Repositories, url: str, workspace: Path, **source: object) -> None:
    await repos.clone(SID, Source(url=url, **source), workspace)  # type: ignore[arg-type]
    (workspace / "src" / "a.py").write_text("a = 2\n")
    await repos.snapshot(SID, workspace, turn_id="t_1", message="Change a")
    (workspace / "NEW.md").write_text("new\n")


@pytest.mark.parametrize("depth", [0, 1])
async def test_a_push_lands_a_new_branch_on_the_daemon(
    repos: Repositories, git_servers: GitServers, workspace: Path, depth: int
) -> None:
    origin_repo(git_servers)
    url = git_servers.git_url("app")
    await changed_clone(repos, url, workspace, depth=depth)
    plan = await repos.prepare_push(SID, workspace, branch="fix/a")
    assert (plan.remote, plan.branch) == (url, "fix/a")
    assert len(plan.commits) == 2 and plan.commits[-1] == plan.commit
    assert "src/a.py" in plan.stat and "NEW.md" in plan.stat
    assert plan.base == git_servers.rev("app", "main")

    assert await repos.push(SID, plan) == plan.commit
    assert git_servers.rev("app", "refs/heads/fix/a") == plan.commit
    assert git_servers.git("app", "show", "fix/a:NEW.md") == "new\n"
    assert git_servers.rev("app", "main") == plan.base  # untouched


async def test_a_push_over_http_uses_the_credential(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    await changed_clone(repos, git_servers.http_url("app"), workspace)
    plan = await repos.prepare_push(SID, workspace, branch="", message="All of it", squash=True)
    assert plan.branch == "blitz/a1b2c3d4e5f6" and len(plan.commits) == 1
    git_servers.requests.clear()
    await repos.push(SID, plan)
    assert git_servers.rev("app", "refs/heads/blitz/a1b2c3d4e5f6") == plan.commit
    assert any(
        method == "POST" and "receive-pack" in path for method, path, _ in git_servers.requests
    )
    assert git_servers.git("app", "log", "-1", "--format=%s%n%an", plan.commit).splitlines() == [
        "All of it",
        "Blitz",
    ]


async def test_a_plan_survives_a_round_trip_and_is_found_again(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    await changed_clone(repos, git_servers.git_url("app"), workspace)
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    again = await repos.planned(SID, branch="topic", commit=plan.commit)
    assert again == plan
    restored = PushPlan(**json.loads(json.dumps(asdict(plan))))
    assert await repos.push(SID, restored) == plan.commit
    with pytest.raises(SourceRefused) as caught:
        await repos.planned(SID, branch="topic", commit="0" * 40)
    assert caught.value.field == "commit"


async def test_a_plan_cannot_be_redirected(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    git_servers.make_repo("elsewhere", {"x": "x\n"})
    await changed_clone(repos, git_servers.git_url("app"), workspace)
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    for forged in (
        PushPlan(**{**asdict(plan), "remote": git_servers.git_url("elsewhere")}),
        PushPlan(**{**asdict(plan), "commit": plan.base}),
        PushPlan(**{**asdict(plan), "branch": "other"}),
    ):
        with pytest.raises(RepoError):
            await repos.push(SID, forged)
    assert git_servers.rev("elsewhere", "refs/heads/topic") == ""
    assert git_servers.rev("app", "refs/heads/topic") == ""


async def test_the_default_branch_is_refused_unless_allowed(
    make_repos: MakeRepos, git_servers: GitServers, workspace: Path, tmp_path: Path
) -> None:
    origin_repo(git_servers)
    repos = make_repos()
    await changed_clone(repos, git_servers.git_url("app"), workspace)
    with pytest.raises(SourceRefused) as caught:
        await repos.prepare_push(SID, workspace, branch="main")
    assert caught.value.field == "branch"
    for bad in ("-f", "a..b", "x.lock", "HEAD", "with space", "refs/heads/x"):
        with pytest.raises(SourceRefused):
            await repos.prepare_push(SID, workspace, branch=bad)

    allowing = make_repos(push_default_branch=True)
    plan = await allowing.prepare_push(SID, workspace, branch="main")
    await allowing.push(SID, plan)
    assert git_servers.rev("app", "main") == plan.commit


async def test_a_branch_that_moved_elsewhere_is_rejected_not_forced(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    await changed_clone(repos, git_servers.git_url("app"), workspace)
    theirs = git_servers.commit("app", {"theirs.txt": "x\n"}, branch="topic")
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    with pytest.raises(RepoError) as caught:
        await repos.push(SID, plan)
    assert caught.value.kind == "rejected"
    assert "topic" in str(caught.value)
    assert git_servers.rev("app", "refs/heads/topic") == theirs


async def test_nothing_to_push_is_said(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    await repos.clone(SID, Source(url=git_servers.git_url("app")), workspace)
    with pytest.raises(RepoError) as caught:
        await repos.prepare_push(SID, workspace, branch="topic")
    assert caught.value.kind == "nothing"


async def test_a_push_refused_by_the_server_keeps_the_password_out_of_the_error(
    repos: Repositories, git_servers: GitServers, workspace: Path
) -> None:
    origin_repo(git_servers)
    await changed_clone(repos, git_servers.http_url("app"), workspace)
    plan = await repos.prepare_push(SID, workspace, branch="topic")
    git_servers.refuse_next = 1000
    with pytest.raises(RepoError) as caught:
        await repos.push(SID, plan)
    assert caught.value.kind == "unreachable"
    assert git_servers.http_password not in str(caught.value)
    assert git_servers.rev("app", "refs/heads/topic") == ""
