"""Recovery: what a process that died left of its turns, settled when the next one starts.

Every turn the store holds as running or parked is looked at once, before the server
takes calls. A turn the dead process was starting gets the `accepted` every turn has; one
it was finishing has its records follow its `finished`; one it was running ends with
SERVER_RESTARTED; a parked one in a session it was closing is cancelled; every other
parked turn waits on, its deadlines filed again, and resumes at once if the dead process
had stored answers to all its requests. It only reads the store and calls the turn driver
and the pending requests; it keeps no state.
"""

from __future__ import annotations

from blitz.core.active_turn import ActiveTurn
from blitz.core.event_log import EventLog
from blitz.core.pending import PendingRequests
from blitz.core.turns import Turns
from blitz.errors import BlitzError, Reason
from blitz.store import Store, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["recover"]


async def recover(*, store: Store, log: EventLog, turns: Turns, pending: PendingRequests) -> None:
    """Settle every unfinished turn in the store (see the module doc)."""
    for state in (TurnState.RUNNING, TurnState.PARKED):
        for rec in await store.turns_in_state(state):
            session = await store.get_session(rec.session_id)
            if session is None:
                continue
            active = ActiveTurn(rec=rec, turn=t.Turn.FromString(rec.turn), session=session)
            last = await store.last_event_of_turn(rec.session_id, rec.turn_id)
            if last is None:
                accepted = await log.commit(
                    rec.session_id, rec.turn_id, t.TurnEvent(accepted=t.Accepted())
                )
                rec.first_seq = accepted.seq
            elif t.TurnEvent.FromString(last.data).HasField("finished"):
                await turns.release_session(active)
                await turns.record_finished(active)
                continue
            if state == TurnState.RUNNING or session.turn_id != rec.turn_id:  # or it was ending
                await turns.finish(
                    active,
                    error=BlitzError(
                        Reason.SERVER_RESTARTED, "the server restarted while the turn was running"
                    ),
                )
            elif session.state == s.SESSION_STATE_CLOSED:  # it died closing the session
                await turns.finish(
                    active, error=BlitzError(Reason.CANCELLED, "the session was closed")
                )
            else:
                turns.live.parked(rec.session_id, rec.turn_id)
                await pending.arm(rec)
                await pending.settle(rec.session_id, rec.turn_id)
