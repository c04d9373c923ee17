"""This process's hold on the turns it runs, and what other processes ask of them.

`TurnHolds` is the base of the turn driver (`endings.TurnEndings`, then `turns.Turns`,
inherit it): taking a turn (the store's `claim_turn` decides who), letting go of one
another process took over (`lost`: nothing more is written of it here), what other
processes ask of a turn held here (to cancel it, or take steer text: `asked`, and the
leases' renewals, `renewed`), and the counts the metrics read. Nothing here starts or
ends a turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from blitz.core.active_turn import ActiveTurn, LiveTurns
from blitz.core.supervisor import Supervisor
from blitz.errors import BlitzError, Reason
from blitz.store import SessionRecord, Store, TurnControl, TurnState
from blitz.v1 import turn_pb2 as t

__all__ = ["TurnHolds"]

log = structlog.get_logger(__name__)


class TurnHolds:
    """The turns this process holds; the driver (turns.py) holds what is used here."""

    # This process, as the holder of the turns it runs, and how long a hold lasts.
    owner: str
    lease: float
    _store: Store
    _live: LiveTurns
    _tasks: Supervisor
    # Called when another process asks something of a turn held here (`on_asked`).
    _asked: Callable[[], None]

    async def cancel(self, active: ActiveTurn, reason: BlitzError) -> None:
        raise NotImplementedError  # pragma: no cover - endings.TurnEndings.cancel

    async def take(
        self,
        session: SessionRecord,
        turn_id: str,
        state: TurnState,
        *,
        expired_before: float | None = None,
    ) -> ActiveTurn | None:
        """Take the turn if it is in `state` (see `Store.claim_turn`): held here, running.

        None when another process took it or it ended first.
        """
        rec = await self._store.claim_turn(
            session.id,
            turn_id,
            state=state,
            owner=self.owner,
            lease_until=time.time() + self.lease,
            expired_before=expired_before,
        )
        if rec is None:
            return None
        active = ActiveTurn(
            rec=rec,
            turn=t.Turn.FromString(rec.turn),
            session=session,
            steer_waiting=bool(rec.steer),
            acted=True,  # what its earlier runs did is not known here
            start_taken=None,  # nor whether they took its start checkpoint
        )
        self._live.add(active)
        return active

    # What the event log reports (`LogListener`)

    def lost(self, session_id: str, turn_id: str) -> None:
        active = self._live.held(session_id, turn_id)
        if active is not None:
            self._lose(active)

    def asked(self, session_id: str, turn_id: str) -> None:
        if self._live.held(session_id, turn_id) is not None:
            self._asked()  # the leases read what was asked, with the next renewal

    def _lose(self, active: ActiveTurn) -> None:
        """Another process took the turn over: stop it here without writing anything."""
        if active.lost:
            return
        active.lost = True
        self._live.discard(active)
        task = active.task
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    # What the other parts of the core ask of the turns held here

    def steered(self, session_id: str, turn_id: str) -> None:
        """Steer text was queued in the store for the turn: its next model call takes it."""
        held = self._live.held(session_id, turn_id)
        if held is not None:
            held.steer_waiting = True

    def count(self, state: TurnState) -> int:
        """How many turns are in `state` now (for the metrics)."""
        return self._live.count(state)

    def count_parked_in_store(self, parked: int) -> None:
        """The parked turns of every process, as the store counts them (a shared store)."""
        self._live.parked_count = parked

    def found_parked(self, session_id: str, turn_id: str) -> None:
        """Count a turn recovery found parked at start."""
        self._live.parked(session_id, turn_id)

    def on_asked(self, callback: Callable[[], None] | None) -> None:
        """Call `callback` when another process asks something of a turn held here (the
        leases renew at once, and read what was asked); None: stop."""
        self._asked = callback or (lambda: None)

    async def _check_held(self, active: ActiveTurn) -> None:
        """Stop `active` here if its row says another process holds it now."""
        rec = await self._store.get_turn(active.session_id, active.turn_id)
        if active.lost or active.rec.state != TurnState.RUNNING:
            return  # it parked or ended meanwhile, or was already let go
        if rec is None or rec.owner != self.owner or rec.epoch != active.rec.epoch:
            log.warning("turn_lost", session_id=active.session_id, turn_id=active.turn_id)
            self._lose(active)

    def lapsed(self) -> None:
        """This process could not renew its leases for most of a lease: stop its running
        turns here, without a further write, before another process may take them over
        (leases.py)."""
        for active in self._live.all():
            if not active.lost and active.rec.state == TurnState.RUNNING:
                log.warning("turn_lease_lapsed", session_id=active.session_id,
                            turn_id=active.turn_id)  # fmt: skip
                self._lose(active)

    def renewed(self, held: Sequence[TurnControl], *, read_at: float) -> None:
        """Act on a renewal of this process's leases, which read the store at `read_at`
        (monotonic) and answered the turns still held here (`held`).

        A running turn missing from it (or held at another epoch) was taken over while
        this process could not renew, unless it parked or ended here after the renewal
        read the store: its row decides (`_check_held`), and a taken turn is stopped here
        without a further write. A turn
        someone asked to take steer text or to cancel gets it, so a request reaches its
        turn even if its announcement was missed.
        """
        controls = {(c.session_id, c.turn_id): c for c in held}
        for active in self._live.all():
            if active.lost or active.rec.state != TurnState.RUNNING:
                continue
            if active.held_since > read_at:
                continue  # taken after the renewal read the store
            control = controls.get((active.session_id, active.turn_id))
            if control is None or control.epoch != active.rec.epoch:
                # The renewal read the store a while ago (on its own thread): the turn may
                # have parked or ended here since. Its row says whether it was taken.
                self._tasks.spawn(self._check_held(active), name=f"held-{active.turn_id}")
                continue
            if control.steer:
                active.steer_waiting = True
            if control.cancel and active.cancel_reason is None:
                self._tasks.spawn(
                    self.cancel(active, BlitzError(Reason.CANCELLED, "the turn was cancelled")),
                    name=f"cancel-{active.turn_id}",
                )
