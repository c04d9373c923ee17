"""Turns queued behind their session's: RunTurn's BUSY_STRATEGY_ENQUEUE and INTERRUPT.

A queued turn is data, like a parked one: a turn in the store in state `queued`, with its
`accepted` event and a notice in the log, held by no process, and its place in its
session's queue (`TurnRecord.queued`: the time it was queued, or, for a turn that
interrupts, the negative of it, so that it goes first). Whichever process ends a
session's main turn starts the next queued one (`start_next`): the turn is taken and the
session made its in one transaction (`Store.start_queued`), so of two processes trying,
one does, and a session that is not idle (a turn started meanwhile, or it closed) starts
nothing. A turn queued just as the session's turn ended is started by the process that
queued it, which looks once more after queueing; at start, and in the leases' sweep where
processes share the store, sessions left idle with a queue are started too
(`recovery.py`). So a queue survives a restart, and no turn waits behind a turn that has
ended.

A queued turn's deadline counts from its start, and its `before` usage is the session's
then. Cancelling it ends it where it is, with its `finished`, without having run.
"""

from __future__ import annotations

import time
from datetime import timedelta

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.endings import TurnEndings
from blitz.core.driver.prompt import turn_images, turn_prompt
from blitz.core.usage import session_usage
from blitz.errors import BlitzError, Reason
from blitz.store import SessionChange, SessionRecord, TurnEnd, TurnRecord, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["TurnQueue", "interrupted_by"]

log = structlog.get_logger(__name__)

# What a `session_state` event says.
_State = t.SessionStateChange.State


class TurnQueue(TurnEndings):
    """Queueing turns and starting them; the rest of the driver is `turns.Turns`."""

    # What the driver holds (turns.py), used here too.
    _default_timeout: timedelta | None

    def _begin(self, active: ActiveTurn) -> None:  # pragma: no cover - turns.py's
        raise NotImplementedError

    async def enqueue(
        self, session: SessionRecord, turn: t.Turn, turn_id: str, *, front: bool
    ) -> TurnRecord:
        """Record the turn as queued behind the session's, with its `accepted` and a
        notice saying so; `front`: before every turn queued (an interrupting one)."""
        now = time.time()
        rec = TurnRecord(
            session_id=session.id,
            turn_id=turn_id,
            state=TurnState.QUEUED,
            turn=turn.SerializeToString(),
            create_time=now,
            queued=-now if front else now,
        )
        await self._store.create_turn(rec, lease_until=now)
        accepted = await self._log.commit(
            session.id, turn_id, t.TurnEvent(accepted=t.Accepted(turn=turn))
        )
        rec.first_seq = accepted.seq
        ahead = [q.turn_id for q in await self._store.queued_turns(session.id)]
        ahead = ahead[: ahead.index(turn_id)] if turn_id in ahead else ahead
        waits_for = f"turn {session.turn_id}" if session.turn_id else "the session's turn"
        if ahead:
            waits_for += f" and {len(ahead)} queued before it"
        text = f"Queued: this turn starts once {waits_for} has finished."
        if front:
            text = f"Queued first: {waits_for} is being cancelled so that this turn can start."
        await self._log.commit(session.id, turn_id, t.TurnEvent(notice=t.Notice(text=text)))
        log.info("turn_queued", session_id=session.id, turn_id=turn_id, front=front)
        return rec

    async def start_next(self, session_id: str) -> None:
        """Start the session's first queued turn, if it has one and is idle."""
        queued = await self._store.queued_turns(session_id)
        if not queued:
            return
        async with self._locks(session_id):
            session = await self._store.get_session(session_id)
            if session is None or session.state != s.SESSION_STATE_IDLE:
                return
            first = queued[0]
            turn = t.Turn.FromString(first.turn)
            now = time.time()
            timeout = (
                turn.timeout.ToTimedelta() if turn.HasField("timeout") else self._default_timeout
            )
            first.deadline = now + timeout.total_seconds() if timeout else None
            first.usage_before = (await session_usage(self._store, session_id)).SerializeToString()
            claim = SessionChange(
                update_time=now,
                state=s.SESSION_STATE_RUNNING,
                turn_id=first.turn_id,
                plan=None if turn.command else b"",
                expect_state=s.SESSION_STATE_IDLE,
            )
            rec = await self._store.start_queued(
                first, owner=self.owner, lease_until=now + self.lease, session=claim
            )
            if rec is None:
                return  # started elsewhere, or the session was taken meanwhile
            self.announce(session_id, _State.STATE_RUNNING, rec.turn_id, fence=rec.epoch)
            active = ActiveTurn(
                rec=rec,
                turn=turn,
                session=session,
                prompt="" if turn.command else turn_prompt(session.plan, turn),
                images=await turn_images(self._store, session_id, turn),
            )
            log.info("queued_turn_started", session_id=session_id, turn_id=rec.turn_id)
            self._begin(active)

    def _ended(self, session_id: str) -> None:
        """A main turn of the session has ended: its queue goes on."""
        self.start_soon(session_id)

    def start_soon(self, session_id: str) -> None:
        """`start_next`, in a task of its own (callers may hold the session's lock)."""
        self._tasks.spawn(self._next_or_log(session_id), name=f"queue-{session_id}")

    async def _next_or_log(self, session_id: str) -> None:
        try:
            await self.start_next(session_id)
        except Exception:
            log.exception("queued_turn_not_started", session_id=session_id)

    async def end_queued(self, session_id: str, turn_id: str, reason: BlitzError) -> bool:
        """End a queued turn with `reason` without running it; False if it is not queued."""
        async with self._locks(session_id):
            rec = await self._store.claim_turn(
                session_id,
                turn_id,
                state=TurnState.QUEUED,
                owner=self.owner,
                lease_until=time.time() + self.lease,
            )
            if rec is None:
                return False
            before = await session_usage(self._store, session_id)
            finished = t.TurnFinished(before=before, after=before)
            finished.error.CopyFrom(reason.to_proto())
            end = TurnEnd(
                session_id=session_id,
                turn_id=turn_id,
                epoch=rec.epoch,
                model_calls=0,
                cost_usd=0.0,
                first_seq=rec.first_seq,
                release=None,
                keep_history=0,
            )
            await self._log.commit(
                session_id, turn_id, t.TurnEvent(finished=finished), fence=rec.epoch, writes=(end,)
            )
        log.info("queued_turn_ended", session_id=session_id, turn_id=turn_id)
        return True


def interrupted_by(turn_id: str) -> BlitzError:
    """How a turn ends that a RunTurn with BUSY_STRATEGY_INTERRUPT stopped."""
    return BlitzError(
        Reason.CANCELLED, f"a new turn ({turn_id}) interrupted this one", {"turn_id": turn_id}
    )
