"""Submodules, fetched only when a source asks for them, and each only if it is allowed.

`.gitmodules` is the repository's, so hostile: it is read from the start commit with
`git config --blob --no-includes` (no include can pull in another file), and each entry is
checked before anything is fetched. Its URL, resolved against the source's when relative
(`../lib.git`), must match an allow pattern like any source; its path must be a plain path
inside the workspace (no `..`, no `.git`, no link on the way) where the start commit has a
submodule (a gitlink) and the checkout left an empty folder; its name plain too. What fails
a check is left out and said in a notice; the rest are fetched the hardened way, the
commit the superproject records and only it, and checked out detached, one level deep
(their own submodules are not fetched). A submodule that cannot be fetched is a notice
too, but the size bound and the timeout fail the whole clone.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from blitz.repos import disk
from blitz.repos.errors import RepoError, SourceRefused
from blitz.repos.git import Git, SizeBound, clean_message
from blitz.repos.settings import Credential
from blitz.repos.sources import Origin, relative_url

__all__ = ["fetch_submodules"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_PATH_MAX = 1024
_MAX_SUBMODULES = 100


async def fetch_submodules(
    git: Git,
    *,
    git_dir: Path,
    start: str,
    workspace: Path,
    base: Origin,
    depth: int,
    size: SizeBound,
    origin_of: Callable[[str], Origin],
    credential_of: Callable[[str], Credential | None],
) -> list[str]:
    """Fetch the allowed submodules of `start` into `workspace`; notices of the rest."""
    listed = await git.run(["ls-tree", "--full-tree", start, "--", ".gitmodules"], git_dir=git_dir)
    if not listed.out.strip():
        return []
    got = await git.run(
        [
            "config",
            "--no-includes",
            "--null",
            f"--blob={start}:.gitmodules",
            "--get-regexp",
            r"^submodule\..*\.(path|url)$",
        ],
        git_dir=git_dir,
        ok=(0, 1),
    )
    entries: dict[str, dict[str, str]] = {}
    for item in got.out.split(b"\0"):
        key, _, value = item.decode("utf-8", "replace").partition("\n")
        if not key.startswith("submodule.") or "." not in key[10:]:
            continue
        name, _, field = key[10:].rpartition(".")
        entries.setdefault(name, {})[field] = value
    notices: list[str] = []
    for count, name in enumerate(sorted(entries)):
        if count >= _MAX_SUBMODULES:
            notices.append(f"Submodules after the first {_MAX_SUBMODULES} were left out.")
            break
        notice = await _one(
            git,
            name,
            entries[name],
            git_dir=git_dir,
            start=start,
            workspace=workspace,
            base=base,
            depth=depth,
            size=size,
            origin_of=origin_of,
            credential_of=credential_of,
        )
        if notice:
            notices.append(notice)
    return notices


async def _one(
    git: Git,
    name: str,
    entry: dict[str, str],
    *,
    git_dir: Path,
    start: str,
    workspace: Path,
    base: Origin,
    depth: int,
    size: SizeBound,
    origin_of: Callable[[str], Origin],
    credential_of: Callable[[str], Credential | None],
) -> str:
    """Fetch one submodule; a notice when it is left out, else ""."""
    path, url = entry.get("path", ""), entry.get("url", "")
    shown = f"Submodule {clean_message(name)[:100]!r}"
    if not _NAME.match(name) or not _plain_path(path) or not url:
        return f"{shown} was left out: its name, path or URL in .gitmodules is not a plain one."
    tree = await git.run(
        ["ls-tree", "-z", "--full-tree", start, "--", path],
        git_dir=git_dir,
        env={"GIT_LITERAL_PATHSPECS": "1"},
    )
    mode, _, rest = tree.text.partition(" ")
    kind, _, rest = rest.partition(" ")
    commit, _, listed_path = rest.partition("\t")
    if mode != "160000" or kind != "commit" or listed_path.rstrip("\0") != path:
        return f"{shown} was left out: the commit records no submodule at {path!r}."
    try:
        origin = origin_of(relative_url(base.url, url))
    except SourceRefused as exc:
        return f"{shown} ({clean_message(url)[:200]}) was left out: {exc}."
    folder = workspace / path
    if not await asyncio.to_thread(_empty_folder_inside, workspace, path):
        return f"{shown} was left out: {path!r} is not an empty folder of the checkout."
    credential = credential_of(origin.url)
    remote = (credential, origin.fetch_url) if credential is not None else None
    sub_git = folder / ".git"
    try:
        await git.run(["init", "-q", "--template=", str(folder)])
        args = ["fetch", "-q", "--no-tags"]
        if depth:
            args.append(f"--depth={depth}")
        await git.run(
            [*args, origin.fetch_url, commit],
            git_dir=sub_git,
            protocols=(origin.scheme,),
            credential=remote,
            size=size,
        )
        await git.run(
            ["checkout", "-q", "--detach", commit], git_dir=sub_git, work_tree=folder, size=size
        )
        await git.run(["config", "remote.origin.url", origin.url], git_dir=sub_git)
        await git.run(
            ["config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"],
            git_dir=sub_git,
        )
        await git.run(["config", f"submodule.{name}.url", origin.url], git_dir=workspace / ".git")
    except RepoError as exc:
        if exc.kind in ("too_large", "timeout"):
            raise
        await asyncio.to_thread(disk.empty_folder, folder)
        return f"{shown} could not be fetched: {exc}"
    return ""


def _plain_path(path: str) -> bool:
    if not path or len(path) > _PATH_MAX or path.startswith("/") or "\\" in path:
        return False
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return False
    parts = path.split("/")
    return all(p not in ("", ".", "..") and p.lower() != ".git" for p in parts)


def _empty_folder_inside(workspace: Path, path: str) -> bool:
    """Whether `path` under `workspace` is an empty folder reached through no link."""
    here = workspace
    for part in path.split("/"):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
    return disk.is_empty(here)
