"""Forks and rewinds of a session's commits, read from its turn log (`blitz-turns`).

A fork gets a copy of the source's git directory (files copied, never linked) with its
head at the turn it was forked at: the commit after that turn's last snapshot, which is
the newest one at or before it, since every turn that snapshots is logged even when it
changed nothing. A rewind moves the head back the same way. Both forget the later turns:
their lines in the log, their `refs/blitz/turns/` refs; a fork also drops the source's
prepared pushes. A turn the log does not know (it never snapshotted) leaves the head as
it is, and says so in the server's log.

The private index is removed rather than rewritten: the next staging reads it again from
the head (`Bare.stage`).
"""

from __future__ import annotations

import asyncio
import shutil

import structlog

from blitz.repos import disk
from blitz.repos.bare import Bare
from blitz.repos.errors import RepoError
from blitz.repos.layout import HEAD, START, TurnEntry, check_id

__all__ = ["fork", "rewind"]

log = structlog.get_logger(__name__)


async def fork(source: Bare, target: Bare, *, at_turn: str) -> None:
    if await asyncio.to_thread(target.git_dir.exists):
        raise RepoError("failed", f"session {target.session_id} already has repository data")
    entries = await source.layout.turns(source.session_id)
    try:
        await asyncio.to_thread(shutil.copytree, source.git_dir, target.git_dir, symlinks=True)
        drop = await target.refs("refs/blitz/push/")
        await _move_head(target, entries, at_turn, drop=drop)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(disk.remove_tree, target.git_dir))
        raise


async def rewind(bare: Bare, *, to_turn: str) -> None:
    entries = await bare.layout.turns(bare.session_id)
    await _move_head(bare, entries, to_turn, drop=[])
    await asyncio.to_thread(disk.remove_tree, bare.index)


async def _move_head(
    bare: Bare, entries: list[TurnEntry], turn_id: str, *, drop: list[str]
) -> None:
    """Head after `turn_id` ("" the current head), later turns forgotten, `drop` deleted."""
    if not turn_id:
        kept = entries
    else:
        check_id(turn_id, "turn id")
        at = next((i for i, e in enumerate(entries) if e.turn_id == turn_id), None)
        if at is None:
            log.warning("repo_turn_unknown", session_id=bare.session_id, turn_id=turn_id)
            kept = entries
        else:
            kept = entries[: at + 1]
    later = {f"refs/blitz/turns/{e.turn_id}" for e in entries[len(kept) :]}
    lines = [f"delete {ref}" for ref in drop]
    lines += [f"delete {ref}" for ref in await bare.refs("refs/blitz/turns/") if ref in later]
    if len(kept) < len(entries):
        head = kept[-1].after if kept else (await bare.rev(START))[0]
        lines.append(f"update {HEAD} {head}")
    await bare.update_refs(lines)
    await bare.layout.write_turns(bare.session_id, kept)
