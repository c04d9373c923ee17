"""Sessions from a repository, as the core's calls see them: a source checked, a clone
made, git's failures told as the protocol's errors.

CreateSession with a `source` clones it into the session's new folder before the session
exists (`clone_into`): a session is never seen half made, and a process that dies
mid-clone leaves no session behind, only a folder the next try does not reuse. The git
work itself, and what makes it safe against a hostile repository, is `blitz.repos`'.
"""

from __future__ import annotations

from pathlib import Path

from blitz.core.repository import repo_error
from blitz.errors import invalid_argument
from blitz.repos import Cloned, RepoError, Repositories, Source, SourceRefused
from blitz.v1 import session_pb2 as s

__all__ = ["clone_into", "ready_notice", "source_of"]


def source_of(req: s.CreateSessionRequest, repos: Repositories | None) -> Source | None:
    """The request's repository source, checked against what the operator allows; None
    when it asks for none."""
    if not req.HasField("source"):
        return None
    given = req.source
    if req.workspace:
        raise invalid_argument(
            "workspace",
            "a session from a repository gets a new folder of its own: leave workspace empty",
        )
    if not given.url:
        raise invalid_argument("source.url", "source.url is required")
    if repos is None or not repos.allowed:
        raise invalid_argument(
            "source.url",
            "this server allows no repository sources (its operator sets --repo-allow)",
        )
    try:
        return repos.check(
            Source(url=given.url, ref=given.ref, depth=given.depth, submodules=given.submodules)
        )
    except SourceRefused as exc:
        raise invalid_argument(exc.field, str(exc)) from None


async def clone_into(
    repos: Repositories, session_id: str, source: Source, folder: Path, *, principal: str
) -> tuple[s.Repository, Cloned]:
    """Clone `source` into the session's new, empty `folder`; what the session records of
    it. A failure is the protocol's error, and leaves the folder empty."""
    try:
        cloned = await repos.clone(session_id, source, folder, principal=principal)
    except RepoError as exc:
        raise repo_error(exc, url=source.url) from None
    repository = s.Repository(
        url=source.url,
        ref=source.ref,
        commit=cloned.commit,
        branch=cloned.branch,
        default_branch=cloned.default_branch,
        depth=source.depth,
        submodules=source.submodules,
    )
    return repository, cloned


def ready_notice(repository: s.Repository, cloned: Cloned) -> str:
    """What the session's log says once its clone is ready."""
    at = repository.ref or f"its default branch ({cloned.default_branch or 'HEAD'})"
    lines = [f"Cloned {repository.url} at {at}: commit {repository.commit}."]
    if repository.branch:
        lines[0] = lines[0][:-1] + f", on branch {repository.branch}."
    return " ".join([*lines, *cloned.notices])
