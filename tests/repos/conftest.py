"""Fixtures for `blitz.repos`: real git servers on 127.0.0.1 (git_servers.py) and a
`Repositories` whose data is under the test's folder, allowed to clone from them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.git_servers import GitServers

from blitz.repos import Credential, RepoSettings, Repositories

MakeRepos = Callable[..., Repositories]


@pytest.fixture
def git_servers(tmp_path: Path) -> Iterator[GitServers]:
    with GitServers(tmp_path / "git") as servers:
        yield servers


@pytest.fixture
def repo_settings(tmp_path: Path, git_servers: GitServers) -> RepoSettings:
    """Every server of `git_servers` allowed, the HTTP one's credential given."""
    credential = Credential(
        git_servers.http_prefix(), git_servers.http_user, git_servers.http_password
    )
    return RepoSettings(
        data_dir=tmp_path / "repo-data",
        allow=git_servers.allow(),
        timeout=60.0,
        credentials=(credential,),
    )


@pytest.fixture
def make_repos(repo_settings: RepoSettings) -> MakeRepos:
    """`make_repos(**changes)`: a `Repositories` with `repo_settings` changed so."""

    def make(**changes: Any) -> Repositories:
        return Repositories(replace(repo_settings, **changes))

    return make


@pytest.fixture
def repos(make_repos: MakeRepos) -> Repositories:
    return make_repos()
