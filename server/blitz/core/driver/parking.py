"""Parking a turn on its requests, and waking it once they are answered or it expires.

When a run stops on requests that need a person, `TurnParking._park` has the pending
requests (`pending.py`) store and announce them with the turn's park, as its holder's last
write: a parked turn is data, held by no process, and nothing of it stays in memory. If
rules approved them all, the turn goes on at once instead. What wakes it is what the
pending requests report (`TurnListener`): `answered`, with everything the turn resumes
with, in whichever process received the last answer; or `expired`, its deadline passed.
Either way the turn is taken again (`take`, which one process wins) before anything is
written. `TurnParking` is part of the turn driver (`turns.Turns` inherits it); driving a
run is `turns.py`'s, ending a turn `endings.py`'s.
"""

from __future__ import annotations

import time

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.endings import interrupted
from blitz.core.driver.queue import TurnQueue
from blitz.core.events.event_log import TurnLost
from blitz.core.requests.pending import Answered
from blitz.errors import BlitzError, Reason
from blitz.ports import Parked, Resolution
from blitz.store import SessionChange, SessionUpdate, TurnRecord, TurnState, TurnUpdate
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["TurnParking", "timed_out"]

log = structlog.get_logger(__name__)

# What a `session_state` event says.
_State = t.SessionStateChange.State


class TurnParking(TurnQueue):
    """Parking turns and waking them; the rest of the driver is `turns.Turns`."""

    def _launch(  # pragma: no cover - turns.py's
        self,
        active: ActiveTurn,
        results: dict[str, Resolution] | None,
        *,
        taken_over: bool = False,
    ) -> None:
        raise NotImplementedError

    async def _park(self, active: ActiveTurn, parked: Parked) -> None:
        """Park the turn on its requests, or go on at once if rules approved them all."""
        rec = active.rec
        sid, tid = rec.session_id, rec.turn_id
        async with self._locks(sid):
            rec.history = parked.history
            # What parks it, written with its requests (pending.py) as its holder's last
            # write (a parked turn has no holder): the turn parked, and its session, with
            # the `session_state` that tells everyone.
            turn = TurnUpdate.of(rec, TurnState.PARKED)
            change = SessionChange(
                update_time=time.time(), state=s.SESSION_STATE_PARKED, expect_turn_id=tid
            )
            state = t.SessionStateChange(state=_State.STATE_PARKED, turn_id=tid)
            parking = (t.TurnEvent(session_state=state), (turn, SessionUpdate(sid, tid, change)))
            settled, requests = await self._pending.park(active, parked, parking=parking)
            still_open = sum(1 for request in requests if request.resolution is None)
            if not still_open:
                if not await self._store.update_turn(rec):
                    raise TurnLost(sid, tid)
                self._launch(active, settled)
                return
            rec.state = TurnState.PARKED
            log.info("turn_parked", turn_id=tid, requests=still_open)
            answered = await self._pending.arm(rec, requests)
            # A parked turn is data: it is in the store, and nothing of it stays here.
            self._live.park(active)
            if answered is not None:
                # Answered elsewhere while it parked: the answerer found it still running
                # and left it, so it is resumed here.
                await self.answered(sid, tid, answered)

    # What the pending requests report (`TurnListener`)

    async def answered(self, session_id: str, turn_id: str, answered: Answered) -> None:
        """Resume a parked turn whose requests are all resolved, with their results; or end
        it, when one was denied with `interrupt`. Called with the lock held."""
        session = await self._store.get_session(session_id)
        if session is None or session.turn_id != turn_id:
            return
        held = self._live.held(session_id, turn_id)
        if held is not None and held.cancel_reason is not None:
            return  # being cancelled: the cancel ends it
        active = await self.take(session, turn_id, TurnState.PARKED)
        if active is None:
            return  # another process resumed it, or it ended
        if answered.interrupted:
            # Ended rather than resumed; in a task, since ending takes the lock held here.
            self._tasks.spawn(
                self._finish(active, output="", error=interrupted()),
                name=f"finish-{turn_id}",
            )
            return
        # The session is marked running with the `session_state` that says so.
        change = SessionChange(
            update_time=time.time(), state=s.SESSION_STATE_RUNNING, expect_turn_id=turn_id
        )
        running = (SessionUpdate(session_id, turn_id, change),)
        self.announce(
            session_id, _State.STATE_RUNNING, turn_id, fence=active.rec.epoch, writes=running
        )
        self._launch(active, answered.results)

    async def expired(self, session_id: str, turn_id: str) -> None:
        """End a parked turn whose deadline passed."""
        session = await self._store.get_session(session_id)
        active = await self.take(session, turn_id, TurnState.PARKED) if session else None
        if active is not None:
            await self.finish(active, error=timed_out(active.rec))


def timed_out(rec: TurnRecord) -> BlitzError:
    """A turn's end at its deadline, parked or running."""
    return BlitzError(
        Reason.TURN_TIMEOUT,
        "the turn passed its deadline",
        {"deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(rec.deadline or 0))},
    )
