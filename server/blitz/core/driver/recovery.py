"""Recovery: what a process that died left of its turns, settled by another.

A running turn whose holder died is taken over (once its lease has ended, where processes
share the store; at once at start otherwise, the store being this process's alone). A
turn the dead process was starting gets the `accepted` every turn has; one it was
finishing has its records follow its `finished`; any other ends with SERVER_RESTARTED
(CANCELLED in a closed session), but for a workflow run, which goes on at the step it
was in (workflow_runs.py). Its committed events stay; nothing of its step in flight is
replayed.

A queued turn is held by no one either: a session left idle with a queue (its process
died between a turn's end and the next one's start) has its next turn started
(`start_queues`), at start and in the leases' sweep.

A parked turn is held by no one, so nothing of it dies with a process, but what that
process was doing to it may be left half done: answers stored and not announced, or the
last answer stored and the turn not resumed; a deadline nobody is timing; a close that did
not get to cancel it. `settle_parked` completes each. At start, every parked turn is looked
at (and its deadlines filed) on a store of one process; where processes share it, the
leases' sweep looks at the parked turns the store says need someone
(`Store.parked_turns_due`), every few seconds. It only reads the store and calls the turn
driver and the pending requests; it keeps no state.
"""

from __future__ import annotations

import time

import structlog

from blitz.core.driver.turns import Turns
from blitz.core.events.event_log import EventLog
from blitz.core.requests.pending import PendingRequests
from blitz.errors import BlitzError, Reason
from blitz.store import Store, TurnRecord, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["Recovery"]

log = structlog.get_logger(__name__)


class Recovery:
    """Settles turns whose holder died, and parked turns left half done."""

    def __init__(
        self, *, store: Store, log: EventLog, turns: Turns, pending: PendingRequests
    ) -> None:
        self._store = store
        self._log = log
        self._turns = turns
        self._pending = pending

    async def at_start(self) -> None:
        """Before the server takes calls: what dead processes left (see the module doc)."""
        shared = self._store.shared
        now = time.time()
        running = await self._store.turns_in_state(
            TurnState.RUNNING, lease_ended_before=now if shared else None
        )
        for rec in running:
            await self.take_over(rec, expired_before=now if shared else None)
        if shared:
            await self.sweep_parked()
        else:
            for rec in await self._store.turns_in_state(TurnState.PARKED):
                await self.settle_parked(rec, at_start=True)
        await self.start_queues()

    async def start_queues(self) -> None:
        """Start the queued turns of sessions left idle (their process died between a
        turn's end and the next one's start); a session that is busy starts its own."""
        queued = await self._store.turns_in_state(TurnState.QUEUED)
        for session_id in sorted({rec.session_id for rec in queued}):
            try:
                await self._turns.start_next(session_id)
            except Exception:
                log.exception("queued_turn_not_started", session_id=session_id)

    async def take_over(self, rec: TurnRecord, *, expired_before: float | None) -> None:
        """End a running turn whose holder died (see the module doc)."""
        session = await self._store.get_session(rec.session_id)
        if session is None:
            return
        active = await self._turns.take(
            session, rec.turn_id, TurnState.RUNNING, expired_before=expired_before
        )
        if active is None:
            return  # another process took it first, or its holder renewed in time
        log.info("turn_taken_over", session_id=rec.session_id, turn_id=rec.turn_id, owner=rec.owner)
        taken = active.rec
        last = await self._store.last_event_of_turn(taken.session_id, taken.turn_id)
        if last is None:
            accepted = await self._log.commit(
                taken.session_id,
                taken.turn_id,
                t.TurnEvent(accepted=t.Accepted(turn=t.Turn.FromString(taken.turn))),
                fence=taken.epoch,
            )
            taken.first_seq = accepted.seq
        elif t.TurnEvent.FromString(last.data).HasField("finished"):
            await self._turns.settle_finished(active)
            return
        if session.state == s.SESSION_STATE_CLOSED:
            error = BlitzError(Reason.CANCELLED, "the session was closed")
        elif await self._turns.survives(active.rec):
            # Its runner can go on (a workflow run: from its stored state, at its step).
            self._turns.take_over(active)
            return
        else:
            error = BlitzError(
                Reason.SERVER_RESTARTED, "the server running the turn stopped while it ran"
            )
        await self._turns.finish(active, error=error)

    async def sweep_parked(self) -> None:
        """Settle the parked turns the store says need someone (a shared store)."""
        now = time.time()
        due = await self._store.parked_turns_due(now=now, settled_before=now - self._turns.lease)
        for rec in due:
            try:
                await self.settle_parked(rec)
            except Exception:
                log.exception("parked_turn_unsettled", turn_id=rec.turn_id)

    async def settle_parked(self, rec: TurnRecord, *, at_start: bool = False) -> None:
        """Complete what was left half done to a parked turn (see the module doc)."""
        sid, tid = rec.session_id, rec.turn_id
        session = await self._store.get_session(sid)
        if session is None:
            return
        last = await self._store.last_event_of_turn(sid, tid)
        ended = last is not None and t.TurnEvent.FromString(last.data).HasField("finished")
        if ended or session.state == s.SESSION_STATE_CLOSED or session.turn_id != tid:
            active = await self._turns.take(session, tid, TurnState.PARKED)
            if active is None:
                return
            if ended:  # it died between its `finished` and its records
                await self._turns.settle_finished(active)
            elif session.state == s.SESSION_STATE_CLOSED:  # it died closing the session
                await self._turns.finish(
                    active, error=BlitzError(Reason.CANCELLED, "the session was closed")
                )
            else:  # it died ending the turn
                await self._turns.finish(
                    active,
                    error=BlitzError(Reason.SERVER_RESTARTED, "the server stopped ending the turn"),
                )
            return
        if at_start:
            self._turns.found_parked(sid, tid)
            await self._pending.arm(rec)
        else:
            await self._pending.check_deadlines(sid, tid)
        await self._pending.settle(sid, tid)
