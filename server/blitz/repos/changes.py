"""What a session changed, in git's terms: the turn commits, the diffs, the exports.

At the end of a turn the workspace is staged and, when its tree differs from the newest
commit's, committed on `refs/blitz/head` (`snapshot`). Commits are Blitz's, authored by
`RepoSettings.author`; their parent is the previous snapshot, so a turn's diff is its
commit against its parent (`blitz-turns` holds the head before and after each turn).

An export's tip is that chain, plus one commit "Uncommitted changes" when the workspace
differs from the newest snapshot (made on no ref: `refs/blitz/head` stays where the turns
left it); squashed, one commit from the start commit to the workspace's tree instead.

Diffs never run a program: `--no-ext-diff --no-textconv`, rename detection (`-M`), binary
files as git shows them ("Binary files … differ") in `diff`, and in full (`--binary`) in an
export, which must apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from blitz.repos.bare import Bare
from blitz.repos.errors import RepoError
from blitz.repos.layout import HEAD, START, TurnEntry, check_id

__all__ = ["Diff", "Export", "Tip", "diff", "export", "snapshot", "tip"]

_DIFF = ["diff", "-M", "--no-ext-diff", "--no-textconv", "--no-color", "--submodule=short"]
UNCOMMITTED = "Uncommitted changes"


@dataclass(frozen=True)
class Diff:
    """`paths`: changed paths (a rename's new path, a deletion's old one); `base`: the
    commit compared; `head`: the commit compared with it ("" for the work tree)."""

    diff: str
    paths: list[str]
    truncated: bool
    base: str
    head: str


@dataclass(frozen=True)
class Export:
    data: bytes
    file_name: str
    commits: list[str] = field(default_factory=list)
    base: str = ""


@dataclass(frozen=True)
class Tip:
    """The commit an export or a push hands back, the start commit, and the commits
    between them (oldest first)."""

    commit: str
    base: str
    commits: list[str]


async def snapshot(bare: Bare, workspace: Path, *, turn_id: str, message: str) -> str | None:
    check_id(turn_id, "turn id")
    tree = await bare.stage(workspace)
    head, head_tree = await bare.rev(HEAD, f"{HEAD}^{{tree}}")
    entries = await bare.layout.turns(bare.session_id)
    last = entries[-1] if entries and entries[-1].turn_id == turn_id else None
    if tree == head_tree:
        if last is None:
            entries.append(TurnEntry(turn_id, head, head))
            await bare.layout.write_turns(bare.session_id, entries)
        return None
    commit = await bare.commit(tree, head, message.strip() or f"Turn {turn_id}")
    await bare.update_refs(
        [f"update {HEAD} {commit} {head}", f"update refs/blitz/turns/{turn_id} {commit}"]
    )
    if last is not None:
        entries[-1] = TurnEntry(turn_id, last.before, commit)
    else:
        entries.append(TurnEntry(turn_id, head, commit))
    await bare.layout.write_turns(bare.session_id, entries)
    return commit


async def diff(bare: Bare, workspace: Path, *, turn_id: str, limit: int) -> Diff:
    if turn_id:
        check_id(turn_id, "turn id")
        entry = next(
            (e for e in await bare.layout.turns(bare.session_id) if e.turn_id == turn_id), None
        )
        if entry is not None:
            base, head = entry.before, entry.after
        elif commit := await bare.maybe_rev(f"refs/blitz/turns/{turn_id}"):
            base, head = (await bare.rev(f"{commit}^"))[0], commit
        else:
            return Diff("", [], False, "", "")
        if base == head:
            return Diff("", [], False, base, head)
        target = head
    else:
        target = await bare.stage(workspace)
        (base,) = await bare.rev(START)
        head = ""
    ran = await bare.run([*_DIFF, base, target], keep=limit * 4 + 4096, cut_ok=True)
    text = ran.text
    truncated = ran.cut or len(text) > limit
    if truncated:
        cut = text.rfind("\n", 0, limit) + 1
        text = text[:cut] + f"[… the diff is cut here: it is longer than {limit:,} characters]\n"
    return Diff(text, await _paths(bare, base, target), truncated, base, head)


async def tip(bare: Bare, workspace: Path, *, squash: bool, message: str) -> Tip:
    """The commit to export or push: the turns' chain and what is not committed yet."""
    tree = await bare.stage(workspace)
    base, head, head_tree, base_tree = await bare.rev(
        START, HEAD, f"{HEAD}^{{tree}}", f"{START}^{{tree}}"
    )
    commit = head
    if tree != head_tree:
        commit = await bare.commit(
            tree, head, f"{UNCOMMITTED}\n\nBlitz-Session: {bare.session_id}\n"
        )
    if squash:
        text = message.strip() or f"Changes from Blitz session {bare.session_id}"
        commit = base if tree == base_tree else await bare.commit(tree, base, text)
    return Tip(commit, base, await bare.commits(base, commit))


async def export(
    bare: Bare,
    workspace: Path,
    *,
    format: str,
    message: str,
    squash: bool,
    branch: str,
    max_size: int,
) -> Export:
    name = f"{bare.session_id}.{format}"
    if format == "diff":
        tree = await bare.stage(workspace)
        (base,) = await bare.rev(START)
        ran = await bare.run([*_DIFF, "--binary", "--full-index", base, tree], keep=max_size)
        return Export(ran.out, name, [], base)
    got = await tip(bare, workspace, squash=squash, message=message)
    if format == "patch":
        if not got.commits:
            return Export(b"", name, [], got.base)
        ran = await bare.run(
            [
                "format-patch",
                "--stdout",
                "--no-signature",
                "-M",
                "--no-color",
                "--full-index",
                "--no-ext-diff",
                "--no-textconv",
                f"{got.base}..{got.commit}",
            ],
            keep=max_size,
        )
        return Export(ran.out, name, got.commits, got.base)
    if not got.commits:
        raise RepoError("nothing", "nothing changed since the start commit: no bundle to make")
    ref = f"refs/heads/{branch}"
    before = await bare.maybe_rev(ref)
    await bare.update_refs([f"update {ref} {got.commit}"])
    try:
        ran = await bare.run(["bundle", "create", "-q", "-", ref, f"^{got.base}"], keep=max_size)
    finally:
        await bare.update_refs([f"update {ref} {before}" if before else f"delete {ref}"])
    return Export(ran.out, name, got.commits, got.base)


async def _paths(bare: Bare, base: str, target: str) -> list[str]:
    ran = await bare.run(
        ["diff", "-M", "--name-status", "-z", "--no-ext-diff", "--no-textconv", base, target],
        keep=32 << 20,
        cut_ok=True,
    )
    tokens = ran.out.split(b"\0")
    paths: list[str] = []
    i = 0
    while i + 1 < len(tokens):
        status = tokens[i][:1]
        if status in (b"R", b"C"):
            if i + 2 >= len(tokens):
                break
            paths.append(tokens[i + 2].decode("utf-8", "replace"))
            i += 3
        else:
            paths.append(tokens[i + 1].decode("utf-8", "replace"))
            i += 2
    return paths
