"""`Repositories`: the one object the core holds for sessions from a repository.

It checks sources against the operator's settings, then serializes each session's git
work: one `asyncio.Lock` per session id, so that two operations never race on the
session's private index or its refs (a fork takes both sessions', in id order). A clone
that fails leaves nothing behind: Blitz's git directory and index are removed and the
workspace emptied (the folder itself stays), even when the clone is cancelled. A push
checks its plan under the lock and talks to the origin outside it, so that a slow origin
never holds up a turn's snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import AsyncIterator
from pathlib import Path

import structlog

from blitz.redact import add_known_secrets
from blitz.repos import changes, disk, history
from blitz.repos import clone as cloning
from blitz.repos import push as pushing
from blitz.repos.bare import Bare
from blitz.repos.changes import Diff, Export
from blitz.repos.clone import Cloned
from blitz.repos.errors import RepoError, SourceRefused
from blitz.repos.git import Git
from blitz.repos.layout import Layout, Meta
from blitz.repos.push import PushPlan
from blitz.repos.settings import Credential, RepoSettings
from blitz.repos.sources import (
    Allow,
    Origin,
    Source,
    check_branch,
    check_depth,
    check_ref,
    credential_for,
)

__all__ = ["Repositories"]

log = structlog.get_logger(__name__)

_FORMATS = ("patch", "diff", "bundle")


class Repositories:
    def __init__(self, settings: RepoSettings) -> None:
        self.settings = settings
        self._allow = Allow(settings.allow)
        self._layout = Layout(settings.data_dir.absolute())
        # PATH is the one thing of the server's environment git gets (to find git).
        self._git = Git(
            home=self._layout.home,
            path=os.environ.get("PATH", os.defpath),
            timeout=settings.timeout,
            author=settings.author,
        )
        add_known_secrets(c.password for c in settings.credentials)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def allowed(self) -> bool:
        """Whether any source is allowed at all."""
        return bool(self._allow)

    def check(self, source: Source) -> Source:
        """`source` normalized, or `SourceRefused` naming the field at fault."""
        origin = self._allow.origin(source.url)
        return Source(
            url=origin.url,
            ref=check_ref(source.ref),
            depth=check_depth(source.depth),
            submodules=bool(source.submodules),
        )

    def has(self, session_id: str) -> bool:
        return self._layout.git_dir(session_id).is_dir()

    async def clone(
        self, session_id: str, source: Source, workspace: Path, *, principal: str = ""
    ) -> Cloned:
        """Clone `source` into the empty folder `workspace`, through Blitz's own copy."""
        source = self.check(source)
        origin = self._allow.origin(source.url)
        workspace = _absolute(workspace)
        async with self._session(session_id):
            bare = await self._bare(session_id, existing=False)
            if not await asyncio.to_thread(_is_empty_folder, workspace):
                raise RepoError("failed", "the workspace is not an empty folder")
            log.info("repo_clone", session_id=session_id, url=origin.url, ref=source.ref)
            try:
                cloned = await cloning.clone(
                    self._git,
                    self._layout,
                    session_id,
                    source,
                    origin,
                    workspace,
                    credential=self._credential(origin.url, principal),
                    max_size=self.settings.max_size,
                    origin_of=self._allow.origin,
                    credential_of=lambda url: self._credential(url, principal),
                )
            except BaseException:
                await asyncio.shield(self._undo(bare, workspace))
                raise
        log.info("repo_cloned", session_id=session_id, commit=cloned.commit)
        return cloned

    async def snapshot(
        self, session_id: str, workspace: Path, *, turn_id: str, message: str
    ) -> str | None:
        """Commit the workspace as turn `turn_id`'s when it changed; the commit, or None."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            return await changes.snapshot(
                bare, _absolute(workspace), turn_id=turn_id, message=message
            )

    async def diff(
        self, session_id: str, workspace: Path, *, turn_id: str = "", limit: int = 512 * 1024
    ) -> Diff:
        """The start commit against the workspace now; or one turn's commit against its
        parent. At most `limit` characters, cut at a line."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            return await changes.diff(bare, _absolute(workspace), turn_id=turn_id, limit=limit)

    async def export(
        self,
        session_id: str,
        workspace: Path,
        *,
        format: str,
        message: str = "",
        squash: bool = False,
        branch: str = "",
    ) -> Export:
        """The changes as a patch series, a diff or a bundle (`format`)."""
        if format not in _FORMATS:
            raise SourceRefused("format", f"no export format {format!r}: patch, diff or bundle")
        if format == "bundle":
            branch = check_branch(branch or pushing.default_branch_name(session_id))
        async with self._session(session_id):
            bare = await self._bare(session_id)
            return await changes.export(
                bare,
                _absolute(workspace),
                format=format,
                message=message,
                squash=squash,
                branch=branch,
                max_size=self.settings.max_size,
            )

    async def prepare_push(
        self,
        session_id: str,
        workspace: Path,
        *,
        branch: str,
        message: str = "",
        squash: bool = False,
    ) -> PushPlan:
        """Make the commit(s) a push of `branch` would send; what it would do."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            meta = await self._meta(session_id)
            branch = self._branch(session_id, branch, meta)
            return await pushing.prepare(
                bare, _absolute(workspace), meta, branch=branch, message=message, squash=squash
            )

    async def planned(self, session_id: str, *, branch: str, commit: str) -> PushPlan:
        """The plan `prepare_push` made for `branch`, if it was for `commit`; else
        `SourceRefused("commit")`."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            meta = await self._meta(session_id)
            branch = self._branch(session_id, branch, meta)
            return await pushing.plan_of(bare, meta, branch=branch, commit=commit)

    async def push(self, session_id: str, plan: PushPlan, *, principal: str = "") -> str:
        """Push the commit `plan` names to the session's origin as a new branch (never
        forced); the commit. Every failure is a `RepoError`."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            meta = await self._meta(session_id)
            if plan.remote != meta.url:
                raise RepoError("failed", "the push plan names another remote than the origin")
            try:
                branch = self._branch(session_id, plan.branch, meta)
                await pushing.plan_of(bare, meta, branch=branch, commit=plan.commit)
                origin: Origin = self._allow.origin(meta.url)
            except SourceRefused as exc:
                raise RepoError("failed", str(exc)) from None
        commit = await pushing.push(bare, plan, origin, self._credential(origin.url, principal))
        log.info("repo_pushed", session_id=session_id, branch=plan.branch, commit=commit)
        return commit

    async def fork(self, source_id: str, fork_id: str, *, at_turn: str = "") -> None:
        """Give `fork_id` a copy of `source_id`'s git data, its head at `at_turn`."""
        async with self._session(source_id, fork_id):
            source = await self._bare(source_id)
            target = await self._bare(fork_id, existing=False)
            await history.fork(source, target, at_turn=at_turn)

    async def rewind(self, session_id: str, *, to_turn: str) -> None:
        """Move the head back to turn `to_turn`'s commit; later turns are forgotten."""
        async with self._session(session_id):
            bare = await self._bare(session_id)
            await history.rewind(bare, to_turn=to_turn)

    async def remove(self, session_id: str) -> None:
        """Delete the session's git data, if it has any."""
        async with self._session(session_id):
            for path in (
                self._layout.git_dir(session_id),
                self._layout.index(session_id),
                self._layout.scratch(session_id),
            ):
                await asyncio.to_thread(disk.remove_tree, path)

    # Inside

    @contextlib.asynccontextmanager
    async def _session(self, *session_ids: str) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for session_id in sorted(set(session_ids)):
                lock = self._locks.get(session_id)
                if lock is None:
                    lock = self._locks[session_id] = asyncio.Lock()
                await stack.enter_async_context(lock)
            yield

    async def _bare(self, session_id: str, *, existing: bool = True) -> Bare:
        bare = Bare(self._git, self._layout, session_id)
        if not existing:
            await asyncio.to_thread(self._layout.prepare)
            if await asyncio.to_thread(bare.git_dir.exists):
                raise RepoError("failed", f"session {session_id} already has repository data")
        elif not await asyncio.to_thread(bare.git_dir.is_dir):
            raise RepoError("failed", f"session {session_id} has no repository data")
        return bare

    async def _meta(self, session_id: str) -> Meta:
        try:
            return await self._layout.meta(session_id)
        except LookupError as exc:
            raise RepoError("failed", str(exc)) from None

    def _branch(self, session_id: str, branch: str, meta: Meta) -> str:
        return pushing.checked_branch(
            session_id, branch, meta, allow_default=self.settings.push_default_branch
        )

    def _credential(self, url: str, principal: str) -> Credential | None:
        return credential_for(self.settings.credentials, url, principal)

    async def _undo(self, bare: Bare, workspace: Path) -> None:
        for path in (bare.git_dir, bare.index):
            await asyncio.to_thread(disk.remove_tree, path)
        await asyncio.to_thread(disk.empty_folder, workspace)


def _absolute(path: Path) -> Path:
    """`path` made absolute: git runs in a folder of its own, not the server's."""
    return Path(os.path.abspath(path))


def _is_empty_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and disk.is_empty(path)
