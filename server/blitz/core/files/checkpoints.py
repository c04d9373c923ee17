"""Per-turn checkpoints of a session's workspace: taken, kept bounded, and put back.

Each main turn that runs the agent (not an aside, not a server command) has its workspace
snapshotted before anything of the turn changes it (its start) and once it has ended (its
end), and the store keeps both, each written with the turn's events (`CheckpointWrite`;
the end with the turn's end): a manifest, and the content it names that the session had
not stored yet, by hash. The built-in agent says when it is about to change something (a
command, a file tool's change, an MCP call: `TurnIO.before_change`), and its turn's start
is taken then (`at_change`), once: a turn that only reads and answers takes no snapshot,
and its end alone is stored, as a reference that says it changed nothing. An ACP agent
changes files by itself: its turn's start is taken before it runs (`take_start`). A turn
that made no tool call has an end that is its start, stored as a reference. What the agent
changed in a turn is the difference of the two (core/files/manifests.py): whatever changed
the files meanwhile, its file tools or its commands (or anyone else writing to the folder
during the turn). A start that could not be taken is stored without a manifest: that
turn's changes are unknown.

Rewinding or forking to a turn (`since`, then `put_back`) puts each path the later turns
changed back as it was at the end of that turn (at the start of the next that changed
anything, when that turn has no checkpoint of its own: a command, or one from before
checkpoints). A later turn with no checkpoint at all makes its changes unknown: nothing is
put back then, and `Since.unknown` names it.

Checkpoints are kept for the session's latest turns only (`keep_turns`), and pruned, with
the blobs no kept manifest names, once a few more have gathered (not at every turn: a
prune reads every kept manifest). Only the turn that holds the session writes its
checkpoints, so a prune never races a snapshot of the same session.

It must never fail a turn: a snapshot that cannot be taken is said in a notice on the turn
and the turn goes on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.events.event_log import EventLog
from blitz.core.files import snapshots
from blitz.core.files.manifests import FILE, Entry, decode, restoration
from blitz.core.files.restoring import clear, depth_order, put_back
from blitz.core.files.snapshots import Snapshot, take_snapshot
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace
from blitz.repos import Repositories
from blitz.store import (
    Checkpoint,
    CheckpointWrite,
    SessionRecord,
    Store,
    TurnPage,
    TurnRecord,
    TurnState,
)
from blitz.v1 import turn_pb2 as t

__all__ = ["END", "START", "Checkpoints", "Restored", "Since", "never_changed"]

log = structlog.get_logger(__name__)

# When a checkpoint is taken.
START, END = "start", "end"
# A prune waits until this many more turns than are kept have checkpoints.
PRUNE_MARGIN = 10
# At most this much blob content is read from the store for one step of a restoration.
_RESTORE_BATCH = 32 * 1024 * 1024
# A page of later turns.
_PAGE = 200
# How many of the latest checkpointed turns a start looks back through for a manifest to
# compare with (turns that changed nothing have none).
_LOOK_BACK = 4

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Since:
    """What a rewind or a fork to a turn undoes: the main turns after it (oldest first),
    each path they changed with what it was at the turn (None: nothing), the turns whose
    changes are unknown (no checkpoint), and whether a checkpoint involved was partial."""

    dropped: list[str]
    plan: dict[str, Entry | None] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    partial: bool = False


@dataclass(frozen=True)
class Restored:
    """What a restoration put back, and what it could not, with why."""

    restored: list[str]
    unrestored: dict[str, str]


class Checkpoints:
    """The session's checkpoints, through the store and the session's folder."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        workspace_root: Path,
        keep_turns: int,
        repos: Repositories | None = None,
    ) -> None:
        """`keep_turns`: how many of a session's latest checkpointed turns keep theirs;
        `repos`: where a session from a repository commits each turn's changes."""
        self._store = store
        self._log = log
        self._root = workspace_root
        self._keep = keep_turns
        self._repos = repos

    # Taking them

    async def at_change(self, active: ActiveTurn) -> None:
        """Before the turn's agent changes something: the turn's start checkpoint, if it
        is to be taken now (`ActiveTurn.checkpoint_at_change`) and was not yet."""
        if not active.checkpoint_at_change or active.start_taken or active.aside:
            return
        if active.start_taken is None:  # taken from the store: an earlier run may have
            taken = await self._store.get_checkpoints(active.session_id, active.turn_id)
            if any(c.at == START for c in taken):
                active.start_taken = True
                return
        active.start_taken = True
        await self.take_start(active)

    async def take_start(self, active: ActiveTurn) -> None:
        """The turn's start checkpoint, before its agent changes anything; without a
        manifest when no snapshot could be taken (its changes are then unknown)."""
        if active.aside:
            return
        sid = active.session_id
        # The latest manifest: its unchanged files are not read again.
        previous = await self._latest_manifest(sid, await self._store.checkpointed_turns(sid))
        snap = await self._snapshot(active, previous)
        manifest = None if snap is None else snap.manifest
        checkpoint = Checkpoint(sid, active.turn_id, START, manifest, time.time())
        # In the event log's next batch, fenced: durable before the agent changes anything.
        stored = CheckpointWrite(checkpoint, {} if snap is None else snap.blobs)
        await self._log.write(sid, active.turn_id, (stored,), fence=active.rec.epoch)

    async def _latest_manifest(self, session_id: str, turns: list[str]) -> bytes | None:
        """The files as the latest of `turns` (checkpointed turns, oldest first) that has a
        manifest left them; a turn that changed nothing has none: the one before it."""
        for turn_id in reversed(turns[-_LOOK_BACK:]):
            cps = {c.at: c for c in await self._store.get_checkpoints(session_id, turn_id)}
            if START in cps:
                return _end_manifest(cps) or cps[START].manifest
        return None

    async def take_end(self, active: ActiveTurn) -> CheckpointWrite | None:
        """The turn's end checkpoint, once the agent has ended, for its end to write with
        its `finished` (TurnEnd); first, now and then, a prune. None for a turn with no
        start checkpoint: its changes cannot be told."""
        if active.aside:
            return None
        # Every main turn, a command's too: a fork or a rewind finds its place by it.
        await self._commit_turn(active)
        if active.turn.command:
            return None
        sid, tid = active.session_id, active.turn_id
        start = {c.at: c for c in await self._store.get_checkpoints(sid, tid)}.get(START)
        if start is None and active.checkpoint_at_change:
            # It never came to a change (its start is taken before one, durably): its end
            # alone says that it changed nothing.
            await self._prune(sid)
            return CheckpointWrite(Checkpoint(sid, tid, END, None, time.time()))
        if start is None or start.manifest is None:
            return None
        # Before the end is stored, while the turn still holds the session: the end names
        # no blob its start does not, but the ones it stores new, which are not there yet.
        await self._prune(sid)
        if not active.acted:
            return CheckpointWrite(Checkpoint(sid, tid, END, None, time.time()))
        snap = await self._snapshot(active, start.manifest)
        if snap is None:
            return None
        return CheckpointWrite(Checkpoint(sid, tid, END, snap.manifest, time.time()), snap.blobs)

    async def _commit_turn(self, active: ActiveTurn) -> None:
        """A session from a repository: the turn's changes as a commit of Blitz's own
        (blitz.repos), whatever made them, for per-turn diffs and the exported series
        (none when nothing changed, but the turn is logged in its place all the same)."""
        if self._repos is None or not active.session.repository:
            return
        title = (active.turn.text or "").strip().splitlines()
        message = (title[0][:72] if title else "") or "A turn with no text"
        try:
            folder = await FILE_CALLS.run(Workspace.named, self._root, active.session.workspace)
            await self._repos.snapshot(
                active.session_id,
                folder.root,
                turn_id=active.turn_id,
                message=f"{message}\n\nBlitz-Session: {active.session_id}\n"
                f"Blitz-Turn: {active.turn_id}\n",
            )
        except Exception as exc:  # never fails the turn: its diff is then the next one's
            log.warning("turn_not_committed", error=f"{type(exc).__name__}: {exc}")
            await self._notice(
                active,
                "This turn's changes could not be committed to the session's repository"
                " data: they will show in the next turn's diff.",
            )

    async def _snapshot(self, active: ActiveTurn, previous: bytes | None) -> Snapshot | None:
        """A snapshot of the turn's workspace, its limits said on the turn once; None,
        said too, when it cannot be taken."""
        abandoned = threading.Event()
        try:
            snap = await FILE_CALLS.run(
                take_snapshot,
                self._root,
                active.session.workspace,
                previous,
                abandoned=abandoned,
            )
        except (CallTimedOut, OSError, PathRefused) as exc:
            abandoned.set()
            log.warning("checkpoint_not_taken", error=str(exc))
            await self._notice(
                active,
                "No checkpoint of the workspace could be taken for this turn: a rewind or a"
                " fork to an earlier turn will not put its files back.",
            )
            return None
        except BaseException:
            abandoned.set()  # cancelled: the walk stops at its next entry
            raise
        if snap.limits:
            said = "; ".join(_limit(limit) for limit in sorted(snap.limits))
            await self._notice(
                active,
                f"This turn's checkpoint of the workspace is partial ({said}): a rewind or"
                " a fork to an earlier turn cannot put back what it left out.",
            )
        return snap

    async def _notice(self, active: ActiveTurn, text: str) -> None:
        if active.checkpoint_noticed:
            return
        active.checkpoint_noticed = True
        event = t.TurnEvent(notice=t.Notice(text=text))
        await self._log.commit(active.session_id, active.turn_id, event, fence=active.rec.epoch)

    async def _prune(self, session_id: str) -> None:
        """Drop the checkpoints of all but the latest `keep_turns` turns, and the blobs
        no kept manifest names, once `PRUNE_MARGIN` more have gathered."""
        turns = await self._store.checkpointed_turns(session_id)
        if len(turns) <= self._keep + PRUNE_MARGIN:
            return
        kept, dropped = turns[-self._keep :], turns[: -self._keep]
        manifests = []
        for tid in kept:
            cps = await self._store.get_checkpoints(session_id, tid)
            manifests += [c.manifest for c in cps if c.manifest is not None]
        named = await asyncio.to_thread(_hashes, manifests)
        stale = await self._store.checkpoint_blob_hashes(session_id) - named
        await self._store.drop_checkpoints(session_id, turn_ids=dropped, hashes=stale)
        log.info("checkpoints_pruned", session_id=session_id, turns=len(dropped), blobs=len(stale))

    # Putting back

    async def since(self, session: SessionRecord, turn: TurnRecord) -> Since:
        """What a rewind or a fork to `turn` (finished, not an aside) undoes. The session's
        turn, if one is unfinished (a fork while it runs or is parked), is compared with
        the workspace as it is now."""
        sid = session.id
        later = await self._later_turns(sid, turn)
        dropped = [r.turn_id for r in later if r.state == TurnState.FINISHED]
        at_turn = {c.at: c for c in await self._store.get_checkpoints(sid, turn.turn_id)}
        at_end = _end_manifest(at_turn)
        if never_changed(at_turn):
            # It changed nothing: the files were as the turns before it left them.
            turns = await self._store.checkpointed_turns(sid)
            if turn.turn_id in turns:
                at_end = await self._latest_manifest(sid, turns[: turns.index(turn.turn_id)])
        pairs: list[tuple[bytes, bytes]] = []
        unknown: list[str] = []
        for rec in later:
            if t.Turn.FromString(rec.turn).command:
                continue  # a server command changes no file
            cps = {c.at: c for c in await self._store.get_checkpoints(sid, rec.turn_id)}
            start, end = cps.get(START), cps.get(END)
            if never_changed(cps):
                continue
            if start is None and rec.state != TurnState.FINISHED and rec.model_calls:
                # Unfinished, and no change of its own checkpointed yet: what it may have
                # changed is the workspace now against the last manifest known before it.
                before = pairs[-1][1] if pairs else at_end
                now = None if before is None else await self._now(session, before)
                if before is None or now is None:
                    unknown.append(rec.turn_id)
                else:
                    pairs.append((before, now))
                continue
            if start is None or start.manifest is None:
                if rec.model_calls:  # it ran the agent (else it changed nothing)
                    unknown.append(rec.turn_id)
                continue
            if end is None and rec.state != TurnState.FINISHED:
                now = await self._now(session, start.manifest)
                if now is None:
                    unknown.append(rec.turn_id)
                    continue
                pairs.append((start.manifest, now))
            elif end is None:
                unknown.append(rec.turn_id)
            elif end.manifest is not None:
                pairs.append((start.manifest, end.manifest))
            else:  # the same as its start: it changed nothing, but it says what was then
                pairs.append((start.manifest, start.manifest))
        if unknown:
            return Since(dropped, unknown=unknown)
        base = at_end or (pairs[0][0] if pairs else None)
        plan, partial = await asyncio.to_thread(restoration, base, pairs)
        return Since(dropped, plan=plan, partial=partial)

    async def _later_turns(self, session_id: str, turn: TurnRecord) -> list[TurnRecord]:
        """The session's main turns after `turn`, in the order they were asked (ListTurns')."""
        later: list[TurnRecord] = []
        after = (turn.create_time, turn.turn_id)
        while True:
            page = await self._store.list_turns(
                TurnPage(session_id=session_id, limit=_PAGE, after=after)
            )
            later += [r for r in page if not t.Turn.FromString(r.turn).aside]
            if len(page) < _PAGE:
                return later
            after = (page[-1].create_time, page[-1].turn_id)

    async def _now(self, session: SessionRecord, start: bytes) -> bytes | None:
        """The workspace's manifest now, compared with a start's (its content not kept)."""
        abandoned = threading.Event()
        try:
            snap = await FILE_CALLS.run(
                take_snapshot, self._root, session.workspace, start, keep=False, abandoned=abandoned
            )
        except (CallTimedOut, OSError, PathRefused) as exc:
            abandoned.set()
            log.warning("workspace_not_walked", session_id=session.id, error=str(exc))
            return None
        except BaseException:
            abandoned.set()
            raise
        return snap.manifest

    async def put_back(
        self, *, workspace: str, blobs_of: str, plan: Mapping[str, Entry | None]
    ) -> Restored:
        """Put each path of `plan` back in the workspace folder `workspace`, from the
        blobs of the session `blobs_of`."""
        if not plan:
            return Restored([], {})
        failed: dict[str, str] = {}
        abandoned = threading.Event()
        # What is not known to be done yet (all of it, should the folder be gone).
        pending = set(plan)
        try:
            failed |= await FILE_CALLS.run(clear, self._root, workspace, plan, abandoned)
            wanted = {p: e for p, e in plan.items() if e is not None and p not in failed}
            pending = set(wanted)
            items = [(path, wanted[path]) for path in sorted(wanted, key=depth_order)]
            for batch in _batches(items):
                hashes = {e.hash for _, e in batch if e.kind == FILE and e.restorable}
                blobs = await self._store.checkpoint_blobs(blobs_of, hashes)
                failed |= await FILE_CALLS.run(
                    put_back, self._root, workspace, batch, blobs, abandoned
                )
                pending -= {path for path, _ in batch}
        except (CallTimedOut, OSError, PathRefused) as exc:
            abandoned.set()
            log.warning("files_not_restored", workspace=workspace, error=str(exc))
            for path in pending - failed.keys():
                failed[path] = "the restoration could not be finished"
        except BaseException:
            abandoned.set()
            raise
        restored = sorted((p for p in plan if p not in failed), key=depth_order)
        return Restored(restored, dict(sorted(failed.items())))


def _limit(name: str) -> str:
    """A bound a snapshot met, as its turn's notice says it (the bounds as they are set)."""
    if name == "entries":
        return f"it stopped at {snapshots.ENTRIES_MAX:,} files and folders"
    if name == "depth":
        return f"it did not go into folders nested deeper than {snapshots.DEPTH_MAX} levels"
    if name == "bytes":
        return f"it kept no more than {_size(snapshots.NEW_BYTES_MAX)} of new content"
    if name == "too_large":
        return f"files larger than {_size(snapshots.FILE_MAX)} are recorded without their content"
    return "some folders could not be read"


def _size(count: int) -> str:
    return f"{count // _MIB} MiB" if count % _MIB == 0 else f"{count:,} bytes"


def never_changed(cps: Mapping[str, Checkpoint]) -> bool:
    """Whether a turn's checkpoints (by `at`) say it never came to a change: its end alone,
    a reference (its start is taken before its first change)."""
    end = cps.get(END)
    return START not in cps and end is not None and end.manifest is None


def _end_manifest(cps: Mapping[str, Checkpoint]) -> bytes | None:
    """The manifest of a turn's end (its start's, when its end is a reference to it)."""
    start, end = cps.get(START), cps.get(END)
    if end is None or start is None:
        return None
    return end.manifest if end.manifest is not None else start.manifest


def _hashes(manifests: list[bytes]) -> set[str]:
    named: set[str] = set()
    for data in manifests:
        named |= decode(data).hashes()
    return named


def _batches(items: list[tuple[str, Entry]]) -> list[list[tuple[str, Entry]]]:
    """The items in order, cut where the content they write passes `_RESTORE_BATCH`."""
    batches: list[list[tuple[str, Entry]]] = [[]]
    size = 0
    for item in items:
        weight = item[1].size if item[1].kind == FILE else 0
        if batches[-1] and size + weight > _RESTORE_BATCH:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += weight
    return [batch for batch in batches if batch]
