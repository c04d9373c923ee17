"""How every turn ends, exactly once: cancelled, timed out, failed or done.

`TurnEndings` is the part of the turn driver (`turns.Turns` inherits it, and it inherits
this process's hold on its turns, `holds.TurnHolds`) that ends turns:
a cancel, wherever the turn runs; the turn's one `finished` event; the session let go;
the turn recorded as finished; and, at shutdown, the drain. Starting, driving, parking and
resuming are `turns.py`'s.

A turn's last step is one write: its `finished`, its session let go and the turn recorded
finished, in one transaction of the store (`TurnEnd`), so no process on any replica can
start a turn in the session before the previous one's end is in the log; the per-session
lock orders this process's steps around it. A turn's ending runs in a task of
its own that a cancel of its caller cannot stop halfway. Where processes share the store,
every write passes the epoch the turn is held at, so a process that lost the turn writes
nothing more of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from blitz import metrics
from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.holds import TurnHolds
from blitz.core.driver.runners import TurnRunner
from blitz.core.events.event_log import EventLog, TurnLost
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.locks import SessionLocks
from blitz.core.requests.pending import PendingRequests
from blitz.core.usage import session_usage
from blitz.errors import BlitzError, Reason
from blitz.store import (
    CheckpointWrite,
    SessionChange,
    SessionRecord,
    TurnEnd,
    TurnState,
    TurnWrite,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["FORKABLE_TURNS", "TurnEndings", "interrupted"]

log = structlog.get_logger(__name__)

# A session can be forked at each of its last this many finished turns (ForkSession).
FORKABLE_TURNS = 20
# Seconds between looks at a turn another process is asked to cancel.
_CANCEL_POLL = 0.1
# What a `session_state` event says.
_State = t.SessionStateChange.State


class TurnEndings(TurnHolds):
    """Ending the turns of this process; the rest of the driver is `turns.Turns`."""

    # What the driver holds (turns.py), used here too.
    _log: EventLog
    # Set by `drain`: turns end, and no queued one starts.
    _stopping: bool = False
    _locks: SessionLocks
    _pending: PendingRequests
    _checkpoints: Checkpoints
    # What carries out each turn (turns.py): told of its end before `finished` is written.
    runner_of: Callable[[ActiveTurn], TurnRunner]

    # Cancelling

    async def cancel_turn(self, session: SessionRecord, turn_id: str, reason: BlitzError) -> bool:
        """End the turn with `reason`, wherever it is; False if it has already finished.

        Returns once its `finished` is in the log, or, for a turn another process runs,
        once that process has been asked and has had two leases' time to end it.
        """
        sid = session.id
        asked_at: float | None = None
        while True:
            active = self._live.held(sid, turn_id)
            if active is not None:
                await self.cancel(active, reason)
                if not active.lost:
                    return True
            rec = await self._store.get_turn(sid, turn_id)
            if rec is None or rec.state == TurnState.FINISHED:
                return asked_at is not None
            if rec.state == TurnState.PARKED:
                active = await self.take(session, turn_id, TurnState.PARKED)
                if active is not None:
                    await self.finish(active, error=reason)
                    return True
                continue
            if asked_at is None:
                await self._store.request_cancel(sid, turn_id)
                asked_at = time.monotonic()
            elif time.monotonic() - asked_at > 2 * self.lease + 10:
                log.warning("cancel_unanswered", session_id=sid, turn_id=turn_id)
                return True
            await asyncio.sleep(_CANCEL_POLL)

    async def cancel(self, active: ActiveTurn, reason: BlitzError) -> None:
        """Stop the turn; returns once its `finished` event is in the log.

        The turn is marked under the lock, so that an answer being handled at the same
        moment either resumes it before (and its task is cancelled here) or not at all.
        """
        async with self._locks(active.session_id):
            active.cancel_reason = reason
            task = active.task
            if task is not None:
                task.cancel()
        if task is not None:
            await asyncio.wait({task})
        else:
            await self.finish(active, error=reason)

    # Finishing

    async def finish(
        self, active: ActiveTurn, *, output: str = "", error: BlitzError | None = None
    ) -> None:
        """End the turn with its `finished` event, exactly once.

        The ending runs in a task of its own that a cancel of the caller cannot stop
        halfway (a turn marked finished in the store without its `finished` in the log); if
        it fails, the failure is logged and raised here.
        """
        ending = self._tasks.spawn(
            self._finish(active, output=output, error=error), name=f"finish-{active.turn_id}"
        )
        await asyncio.shield(ending)

    async def _finish(self, active: ActiveTurn, *, output: str, error: BlitzError | None) -> None:
        rec = active.rec
        sid = rec.session_id
        checkpoint = None
        if rec.state != TurnState.FINISHED and not active.lost:
            # What the agent left in the files, while the turn still holds its session (so
            # no rewind can come between), outside the lock (a walk takes a while); it is
            # written with the turn's end.
            try:
                checkpoint = await self._checkpoints.take_end(active)
            except Exception:
                log.exception("checkpoint_failed", session_id=sid, turn_id=rec.turn_id)
        async with self._locks(sid):
            if rec.state == TurnState.FINISHED or active.lost:
                return
            # Still held here, before anything more is written of it? Not once it parked
            # (whoever ends it takes it first); and where processes share the store,
            # another may have taken it over: the store is asked (the write checks the
            # epoch). One process alone changes the epoch only as it takes the turn.
            held = rec.state == TurnState.RUNNING
            if not held or (self._store.shared and not await self._store.update_turn(rec)):
                self._lose(active)
                return
            try:
                await self.runner_of(active).ended(active, error)
                await self._end(active, output=output, error=error, checkpoint=checkpoint)
            except TurnLost:
                self._lose(active)
                return
            rec.state = TurnState.FINISHED
            rec.history = None
            self._live.discard(active)
            if not active.aside and not self._stopping:
                self._ended(sid)

    def _ended(self, session_id: str) -> None:
        """A main turn of the session has ended (with the lock held): the queue's (queue.py)."""

    async def _end(
        self,
        active: ActiveTurn,
        *,
        output: str,
        error: BlitzError | None,
        checkpoint: CheckpointWrite | None = None,
    ) -> None:
        rec = active.rec
        sid = rec.session_id
        await self._pending.withdraw(sid, rec.turn_id, fence=rec.epoch)
        leftover = await self._store.take_steer(sid, rec.turn_id, close=True)
        # The turn's last ledger rows go with events still queued, maybe (turn_io.py).
        await self._log.written()
        finished = t.TurnFinished(
            output=output,
            before=t.Usage.FromString(rec.usage_before),
            after=await session_usage(self._store, sid),
            leftover=leftover,
        )
        if error is not None:
            finished.error.CopyFrom(error.to_proto())
        # The session is let go, the turn recorded finished and its `finished` stored in
        # one transaction (TurnEnd): no process, here or elsewhere, can find the session
        # free while the turn's end is not in the log, nor die in between.
        release = None
        if not active.aside:  # an aside leaves the session as it found it, tasks included
            release = SessionChange(
                update_time=time.time(),
                state=s.SESSION_STATE_IDLE,
                turn_id="",
                tasks=active.todo.SerializeToString() if active.todo is not None else None,
                expect_turn_id=rec.turn_id,
            )
            session = await self._store.get_session(sid)
            if session is not None and session.turn_id == rec.turn_id:
                if session.state != s.SESSION_STATE_CLOSED:
                    # In the same batch, so in the same transaction, before `finished`.
                    self.announce(sid, _State.STATE_IDLE, rec.turn_id, fence=rec.epoch)
        end = TurnEnd(
            session_id=sid,
            turn_id=rec.turn_id,
            epoch=rec.epoch,
            model_calls=rec.model_calls,
            cost_usd=rec.cost_usd,
            first_seq=rec.first_seq,
            release=release,
            keep_history=0 if active.aside else FORKABLE_TURNS,
            history=active.history,
        )
        writes: tuple[TurnWrite, ...] = (end,) if checkpoint is None else (checkpoint, end)
        await self._log.commit(
            sid, rec.turn_id, t.TurnEvent(finished=finished), fence=rec.epoch, writes=writes
        )
        metrics.turn_finished(error.reason.wire if error else None)
        log.info(
            "turn_finished",
            session_id=sid,
            turn_id=rec.turn_id,
            error=error.reason.wire if error else None,
        )

    async def release_session(self, active: ActiveTurn) -> bool:
        """Save the turn's task list and mark its session idle (a closed one stays closed),
        if the session's turn is still this one; whether the session is idle now. For a
        turn whose end was written in two steps, by a server before TurnEnd."""
        if active.aside:
            return False  # an aside leaves the session as it found it, task list included
        released = await self._store.update_session(
            active.session_id,
            SessionChange(
                update_time=time.time(),
                state=s.SESSION_STATE_IDLE,
                turn_id="",
                tasks=active.todo.SerializeToString() if active.todo is not None else None,
                expect_turn_id=active.turn_id,
            ),
        )
        if not released:
            return False
        session = await self._store.get_session(active.session_id)
        return session is not None and session.state == s.SESSION_STATE_IDLE

    def announce(
        self,
        session_id: str,
        state: t.SessionStateChange.State,
        turn_id: str,
        *,
        fence: int | None = None,
        writes: Sequence[TurnWrite] = (),
    ) -> None:
        """Tell every watcher the session changed state because of `turn_id`: an event of
        that turn (its RunTurn stream carries it too), before its `finished`; with
        `writes`, the records that change (see `EventLog.commit`)."""
        change = t.SessionStateChange(state=state, turn_id=turn_id)
        event = t.TurnEvent(session_state=change)
        self._log.emit(session_id, turn_id, event, fence=fence, writes=writes)

    async def record_finished(self, active: ActiveTurn) -> None:
        """Record as finished a turn whose `finished` event is in the log (see
        release_session: what a TurnEnd now writes with it)."""
        rec = active.rec
        if not active.aside:
            # The history as this turn left it, for a fork at it (ForkSession), kept for
            # the session's latest turns only: a copy can be a hundred kilobytes.
            await self._store.keep_turn_history(rec.session_id, rec.turn_id, newest=FORKABLE_TURNS)
        rec.state = TurnState.FINISHED
        rec.history = None
        await self._store.update_turn(rec)

    async def settle_finished(self, active: ActiveTurn) -> None:
        """Complete a turn taken over whose `finished` is in the log already (its holder
        died between that and its records): the session let go, the turn recorded."""
        released = await self.release_session(active)
        await self.record_finished(active)
        self._live.discard(active)
        if released and not self._stopping:
            self._ended(active.session_id)

    # Process life

    async def drain(self, grace: float) -> None:
        """Let running turns finish for up to `grace` s, then stop them; stop the timers.
        No queued turn starts from here on (they wait in the store for the next start)."""
        self._stopping = True
        tasks = {a.task for a in self._live.all() if a.task is not None}
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        for active in self._live.all():
            if active.task is not None:
                await self.cancel(
                    active,
                    BlitzError(
                        Reason.SERVER_RESTARTED, "the server stopped while the turn was running"
                    ),
                )
        await self._tasks.aclose()


def interrupted() -> BlitzError:
    """How a turn ends that a DENY with `interrupt` stopped."""
    return BlitzError(Reason.CANCELLED, "the user denied an action and stopped the turn")
