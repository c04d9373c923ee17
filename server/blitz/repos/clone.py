"""A clone: the source into Blitz's own bare repository first, then the workspace from it.

1. `git ls-remote --symref` of the source: it is reachable, its default branch, and
   whether the ref asked for is a branch, a tag, another ref or (failing those) a commit id.
2. Blitz's bare repository, `DATA_DIR/SESSION.git`: `git clone --bare` at the branch or tag
   (with `--depth`); for a commit id or another ref, `git init --bare` and `git fetch` of
   just that (protocol v2 lets a client ask for any commit; a server that refuses gets a
   full fetch, and an abbreviated id is resolved in it). Its `HEAD` is then the branch
   to check out, or the commit itself (detached), and `refs/blitz/start` and
   `refs/blitz/head` the commit.
3. The workspace: `git clone --no-hardlinks` of `file://DATA_DIR/SESSION.git` into it (Blitz's
   file access refuses files with more than one link), so the agent finds an ordinary
   repository with the history fetched; its `origin` is then the source's URL, and its
   reflogs (which name Blitz's data folder) are dropped.
4. The submodules, when asked for (`submodules.py`), and the private index seeded with
   the start commit, so that a file tracked there but ignored by `.gitignore` stays tracked.

Every step runs under the size bound (the bare repository and the workspace together)
and the timeout. A failure is raised as it is; `Repositories.clone` removes what was made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from blitz.repos import disk
from blitz.repos.errors import RepoError
from blitz.repos.git import Git, Ran, SizeBound, clean_message
from blitz.repos.layout import HEAD, START, Layout, Meta
from blitz.repos.settings import Credential
from blitz.repos.sources import Origin, Source, is_commit_id
from blitz.repos.submodules import fetch_submodules

__all__ = ["Cloned", "clone"]

# Where a fetched commit is kept until refs/blitz/start holds it.
_FETCHED = "refs/blitz/fetched"
# What git says when the ref or commit asked for is not there.
_NOT_FOUND = (
    "not found in upstream",
    "couldn't find remote ref",
    "not our ref",
    "unadvertised object",
    "no such remote ref",
    "remote error: upload-pack: not our ref",
)


@dataclass(frozen=True)
class Cloned:
    """A clone made: the `commit` checked out; `ref` as asked ("" the default branch);
    `branch` the local branch checked out ("" when detached); `default_branch` the
    origin's; `notices` what the user should know (submodules left out)."""

    commit: str
    ref: str
    branch: str
    default_branch: str
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Plan:
    kind: str  # "default", "branch", "tag" or "fetch"
    name: str = ""  # the branch or tag; for "fetch", what to fetch


async def clone(
    git: Git,
    layout: Layout,
    session_id: str,
    source: Source,
    origin: Origin,
    workspace: Path,
    *,
    credential: Credential | None,
    max_size: int,
    origin_of: Callable[[str], Origin],
    credential_of: Callable[[str], Credential | None],
) -> Cloned:
    git_dir = layout.git_dir(session_id)
    bound = SizeBound((git_dir, workspace), max_size)
    remote = _Remote(git, origin, credential)
    default_branch, plan = await _plan(remote, source.ref)
    if plan.kind == "fetch":
        start = await _fetch_one(remote, git_dir, plan.name, source.depth, bound)
        await git.run(["update-ref", "--no-deref", "HEAD", start], git_dir=git_dir)
    else:
        args = ["clone", "--bare", "--template=", "--no-hardlinks", "-q"]
        if source.depth:
            args.append(f"--depth={source.depth}")
        if plan.name:
            args.append(f"--branch={plan.name}")
        ran = await remote.run([*args, "--", origin.fetch_url, str(git_dir)], size=bound)
        _raise_for(ran)
        got = await git.run(
            ["rev-parse", "-q", "--verify", "HEAD^{commit}"], git_dir=git_dir, ok=(0, 1)
        )
        start = got.text.strip()
        if got.code or not start:
            raise RepoError("ref_not_found", "the repository has no commit to check out")
    refs = f"update {START} {start}\nupdate {HEAD} {start}\n"
    if plan.kind == "fetch":
        refs += f"delete {_FETCHED}\n"
    await git.run(["update-ref", "--stdin"], git_dir=git_dir, stdin=refs.encode())
    branch = ""
    if plan.kind in ("default", "branch"):
        head = await git.run(["symbolic-ref", "-q", "HEAD"], git_dir=git_dir, ok=(0, 1))
        branch = head.text.strip().removeprefix("refs/heads/")
    await _check_out(git, git_dir, origin, workspace, bound)
    notices: list[str] = []
    if source.submodules:
        notices += await fetch_submodules(
            git,
            git_dir=git_dir,
            start=start,
            workspace=workspace,
            base=origin,
            depth=source.depth,
            size=bound,
            origin_of=origin_of,
            credential_of=credential_of,
        )
    await git.run(["read-tree", START], git_dir=git_dir, index=layout.index(session_id))
    meta = Meta(
        url=origin.url, ref=source.ref, branch=branch, default_branch=default_branch, start=start
    )
    await layout.write_meta(session_id, meta)
    await layout.write_turns(session_id, [])
    return Cloned(start, source.ref, branch, default_branch, tuple(notices))


class _Remote:
    """Git commands that reach the source: its transport allowed, its credential given."""

    def __init__(self, git: Git, origin: Origin, credential: Credential | None) -> None:
        self.git = git
        self.origin = origin
        self._credential = (credential, origin.fetch_url) if credential is not None else None

    async def run(
        self, args: list[str], *, git_dir: Path | None = None, size: SizeBound | None = None
    ) -> Ran:
        return await self.git.run(
            args,
            git_dir=git_dir,
            protocols=(self.origin.scheme,),
            credential=self._credential,
            size=size,
            ok=range(256),
        )


async def _plan(remote: _Remote, ref: str) -> tuple[str, _Plan]:
    """The origin's default branch, and how to fetch `ref` from it."""
    if not ref:
        patterns = ["HEAD"]
    elif ref.startswith("refs/"):
        patterns = ["HEAD", ref]
    else:
        patterns = ["HEAD", f"refs/heads/{ref}", f"refs/tags/{ref}"]
    ran = await remote.run(["ls-remote", "--symref", remote.origin.fetch_url, *patterns])
    if ran.code:
        raise RepoError("unreachable", _said(ran) or "the repository could not be read")
    listed: set[str] = set()
    default_branch = ""
    for line in ran.text.splitlines():
        left, _, name = line.partition("\t")
        if left.startswith("ref: ") and name == "HEAD":
            default_branch = left[5:].strip().removeprefix("refs/heads/")
        elif name:
            listed.add(name)
    if not ref:
        if "HEAD" not in listed:
            raise RepoError("ref_not_found", "the repository has no commit to check out")
        return default_branch, _Plan("default")
    if ref.startswith(("refs/heads/", "refs/tags/")) and ref in listed:
        kind = "branch" if ref.startswith("refs/heads/") else "tag"
        return default_branch, _Plan(kind, ref.split("/", 2)[2])
    if ref.startswith("refs/") and ref in listed:
        return default_branch, _Plan("fetch", ref)
    if f"refs/heads/{ref}" in listed:
        return default_branch, _Plan("branch", ref)
    if f"refs/tags/{ref}" in listed:
        return default_branch, _Plan("tag", ref)
    if is_commit_id(ref):
        return default_branch, _Plan("fetch", ref)
    raise RepoError("ref_not_found", f"no branch, tag or ref {ref!r} in {remote.origin.url}")


async def _fetch_one(
    remote: _Remote, git_dir: Path, what: str, depth: int, bound: SizeBound
) -> str:
    """Fetch one commit (by id) or ref into a new bare repository; the commit."""
    git = remote.git
    await git.run(["init", "--bare", "-q", "--template=", str(git_dir)])
    fetched = _FETCHED
    url = remote.origin.fetch_url
    full = not is_commit_id(what) or len(what) in (40, 64)
    ran: Ran | None = None
    if full:
        args = ["fetch", "-q", "--no-tags", "--no-write-fetch-head"]
        if depth:
            args.append(f"--depth={depth}")
        ran = await remote.run([*args, url, f"+{what}:{fetched}"], git_dir=git_dir, size=bound)
        if ran.code == 0:
            return await _commit_of(git, git_dir, fetched, what)
        if not is_commit_id(what) or not _is_not_found(ran):
            _raise_for(ran)
    # An abbreviated id, or a server that gives only what its refs point at: all of it.
    specs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    ran = await remote.run(
        ["fetch", "-q", "--no-tags", "--no-write-fetch-head", url, *specs],
        git_dir=git_dir,
        size=bound,
    )
    _raise_for(ran)
    commit = await _commit_of(git, git_dir, what, what)
    await git.run(["update-ref", fetched, commit], git_dir=git_dir)
    return commit


async def _commit_of(git: Git, git_dir: Path, rev: str, asked: str) -> str:
    got = await git.run(
        ["rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}"],
        git_dir=git_dir,
        ok=(0, 1, 128),
    )
    commit = got.text.strip()
    if got.code or not commit:
        raise RepoError("ref_not_found", f"no commit {asked!r} in the repository")
    return commit


async def _check_out(
    git: Git, git_dir: Path, origin: Origin, workspace: Path, bound: SizeBound
) -> None:
    """The workspace as a clone of Blitz's bare repository, its origin the source's URL."""
    await git.run(
        ["clone", "-q", "--template=", "--no-hardlinks", "--", f"file://{git_dir}", str(workspace)],
        protocols=("file",),
        size=bound,
    )
    ws_git = workspace / ".git"
    await git.run(["config", "remote.origin.url", origin.url], git_dir=ws_git)
    await asyncio.to_thread(disk.remove_tree, ws_git / "logs")


def _is_not_found(ran: Ran) -> bool:
    said = ran.err.decode("utf-8", "replace").lower()
    return any(words in said for words in _NOT_FOUND)


def _said(ran: Ran) -> str:
    return clean_message(ran.err.decode("utf-8", "replace"))


def _raise_for(ran: Ran) -> None:
    """A fetch or a clone that failed, as the kind of failure it was."""
    if ran.code == 0:
        return
    if _is_not_found(ran):
        raise RepoError("ref_not_found", _said(ran) or "the ref is not in the repository")
    said = ran.err.decode("utf-8", "replace")
    if "fsck" in said or "bad object" in said.lower():
        raise RepoError("failed", _said(ran))
    raise RepoError("unreachable", _said(ran) or "the repository could not be read")
