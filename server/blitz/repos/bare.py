"""Blitz's bare repository of one session, and the few things every later operation
does with it: read a ref, stage the workspace into the private index, make a commit.

Staging is `git add -A` with Blitz's git directory and the workspace as its work tree,
into `DATA_DIR/SESSION.index`. Git never looks into the workspace's own `.git` that way
(every `.git` entry of a work tree is skipped), and `.gitignore` is honoured. One thing
needs care: for a submodule already in the index, `git add` runs `git status` *inside*
it, a git process that reads that repository's own configuration, which the agent may
have written (a `filter.*.clean` named by its `.gitattributes` would run). So the
submodule entries (gitlinks) are taken out of the index before every `git add -A`, which
then adds them back as a new path, reading only their `HEAD`. One that is not added back
because its folder holds no repository (a submodule never fetched) gets its entry back
as it was, as git itself would keep it; one whose folder is gone stays deleted. (A
submodule that `.gitignore` ignores drops out of the snapshot.)
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from blitz.repos.errors import RepoError
from blitz.repos.git import Git, Ran
from blitz.repos.layout import HEAD, Layout

__all__ = ["Bare"]

_GITLINK = b"160000 "


class Bare:
    """One session's bare repository; `workspace` its work tree for staging."""

    def __init__(self, git: Git, layout: Layout, session_id: str) -> None:
        self.git = git
        self.layout = layout
        self.session_id = session_id
        self.git_dir = layout.git_dir(session_id)
        self.index = layout.index(session_id)

    async def run(
        self,
        args: list[str],
        *,
        workspace: Path | None = None,
        index: bool = False,
        stdin: bytes | None = None,
        keep: int = 4 << 20,
        cut_ok: bool = False,
        env: dict[str, str] | None = None,
        ok: Sequence[int] = (0,),
        sink: Callable[[bytes], None] | None = None,
    ) -> Ran:
        """`git ARGS` on this repository; with `workspace` as its work tree and the
        private index (`index` for the index alone)."""
        return await self.git.run(
            args,
            git_dir=self.git_dir,
            work_tree=workspace,
            index=self.index if index or workspace is not None else None,
            stdin=stdin,
            keep=keep,
            cut_ok=cut_ok,
            env=env,
            ok=ok,
            sink=sink,
        )

    async def rev(self, *revs: str) -> list[str]:
        """The object ids `revs` name, each verified (`RepoError` if one is not there)."""
        asked = "".join(f"{rev}\n" for rev in revs).encode()
        got = await self.run(["cat-file", "--batch-check=%(objectname)"], stdin=asked)
        ids = got.text.split("\n")[: len(revs)]
        for rev, oid in zip(revs, ids, strict=True):
            if oid.endswith(" missing") or oid.endswith(" ambiguous") or not oid:
                raise RepoError("failed", f"{rev} is not in the session's repository data")
        return ids

    async def maybe_rev(self, rev: str) -> str:
        """The object id `rev` names, or "" when it names none."""
        got = await self.run(
            ["rev-parse", "--verify", "-q", "--end-of-options", rev], ok=(0, 1, 128)
        )
        return got.text.strip() if got.code == 0 else ""

    async def stage(self, workspace: Path) -> str:
        """The workspace as it is now, as a tree: its id."""
        if not await asyncio.to_thread(self.index.exists):
            await self.run(["read-tree", HEAD], index=True)
        gitlinks = _Gitlinks()
        await self.run(["ls-files", "-s", "-z"], workspace=workspace, sink=gitlinks.feed)
        if gitlinks.found:
            await self.run(
                ["update-index", "-z", "--force-remove", "--stdin"],
                workspace=workspace,
                stdin=b"".join(path + b"\0" for _, path in gitlinks.found),
            )
        # --ignore-errors: a file that cannot be read, or a repository inside without a
        # commit, is left out (exit code 1) instead of failing the whole snapshot.
        await self.run(["add", "-A", "--ignore-errors"], workspace=workspace, ok=(0, 1))
        if gitlinks.found:
            await self._keep_unpopulated(workspace, gitlinks.found)
        got = await self.run(["write-tree"], index=True)
        return got.text.strip()

    async def _keep_unpopulated(self, workspace: Path, found: list[tuple[bytes, bytes]]) -> None:
        """Put back the submodule entries `git add` did not add again because their
        folder holds no repository (a submodule never fetched, as git itself leaves it):
        a folder with nothing of the index in it gets its entry back; a path that is gone
        stays deleted."""
        paths = [os.fsdecode(path) for _, path in found]
        listed = await self.run(
            ["ls-files", "-z", "--", *paths],
            workspace=workspace,
            env={"GIT_LITERAL_PATHSPECS": "1"},
            keep=64 << 20,
        )
        tracked = [p for p in listed.out.split(b"\0") if p]
        back = b""
        for oid, path in found:
            if any(p == path or p.startswith(path + b"/") for p in tracked):
                continue
            if await asyncio.to_thread(_is_folder, workspace / os.fsdecode(path)):
                back += b"160000 " + oid + b"\t" + path + b"\0"
        if back:
            await self.run(["update-index", "-z", "--index-info"], workspace=workspace, stdin=back)

    async def commit(self, tree: str, parent: str, message: str) -> str:
        got = await self.run(
            ["commit-tree", tree, "-p", parent, "-F", "-"],
            stdin=message.encode(),
            env=self.git.author_env(),
        )
        return got.text.strip()

    async def update_refs(self, lines: list[str]) -> None:
        """`git update-ref --stdin` of `lines` ("update REF NEW [OLD]", "delete REF")."""
        if lines:
            await self.run(
                ["update-ref", "--stdin"], stdin="".join(f"{x}\n" for x in lines).encode()
            )

    async def refs(self, prefix: str) -> list[str]:
        got = await self.run(["for-each-ref", "--format=%(refname)", prefix])
        return got.text.split()

    async def commits(self, base: str, tip: str) -> list[str]:
        """The commits of `base..tip`, oldest first."""
        got = await self.run(["rev-list", "--reverse", f"{base}..{tip}"])
        return got.text.split()


class _Gitlinks:
    """The gitlinks in `git ls-files -s -z` output, read as it streams: (id, path)."""

    def __init__(self) -> None:
        self.found: list[tuple[bytes, bytes]] = []
        self._rest = b""

    def feed(self, chunk: bytes) -> None:
        records = (self._rest + chunk).split(b"\0")
        self._rest = records.pop()
        for record in records:
            if record.startswith(_GITLINK):
                info, _, path = record.partition(b"\t")
                self.found.append((info.split(b" ")[1], path))


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
