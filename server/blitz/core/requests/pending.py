"""Pending requests: parking a turn on them, their deadlines, and how each one ends.

When a run stops on approvals or questions, its turn parks: each request is stored, then
announced (committed to the log), so whatever a client has seen can be answered, even
after a restart. A request ends exactly once, whoever gets there first: a decision or an
answer (`resolve`), a stored rule (when the request is asked, or when the turn parks), its
approval timeout, or the end of its turn (withdrawn). Each ending is stored with the
request and announced as a `resolution` event. Once none of a parked turn's requests is
open, its deadlines are disarmed and the turn's listener (the turn driver) is told, under
the session's lock, with all it needs of them (`Answered`): a resolution travels one way,
and the driver never asks back. A parked turn's deadlines — its own, and its requests'
expiries — wait in one `Deadlines` for all parked turns. Nothing here drives a turn. How
long each request waited for its ending is observed here too (`blitz.metrics`).

Beside it: what the driver is told (`answered.py`), how a rule decides a request as it is
asked (`by_rule.py`), and what a request's event says of it (`request_events.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from functools import partial

import structlog
from google.protobuf import json_format

from blitz.core.active_turn import ActiveTurn
from blitz.core.events.event_log import EventLog
from blitz.core.locks import SessionLocks
from blitz.core.requests.answered import Answered, TurnListener
from blitz.core.requests.approvals import Outcome, outcome_from_json, rule_shown
from blitz.core.requests.by_rule import announce_rule, offer, verdict_on
from blitz.core.requests.deadlines import Deadlines
from blitz.core.requests.request_events import observe_wait, of_step, request_id_of, stamp_expiry
from blitz.ports import AnswerResult, Parked, Resolution, RuleDecision
from blitz.redact import redact_event
from blitz.store import (
    PendingRecord,
    PendingWrite,
    RuleRecord,
    SessionRecord,
    Store,
    TurnRecord,
    TurnState,
    TurnWrite,
)
from blitz.v1 import turn_pb2 as t

__all__ = ["Answered", "PendingRequests", "TurnListener"]

log = structlog.get_logger(__name__)

# How many of a session's last events `settle` reads to find the resolutions a parked turn
# already announced: its requests and their answers are the session's last events.
_SETTLE_SCAN = 1000


class PendingRequests:
    """The open requests of parked turns, and every way they end."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        locks: SessionLocks,
        deadlines: Deadlines,
        approval_timeout: timedelta | None,
    ) -> None:
        self._store = store
        self._log = log
        self._locks = locks
        self._deadlines = deadlines
        self._approval_timeout = approval_timeout
        self._listener: TurnListener | None = None

    def listen(self, listener: TurnListener) -> None:
        self._listener = listener

    @property
    def listener(self) -> TurnListener:
        if self._listener is None:  # pragma: no cover - the driver listens at once
            raise RuntimeError("no turn driver listens to the pending requests")
        return self._listener

    # Rules

    async def rules_of(self, session: SessionRecord) -> list[RuleRecord]:
        """The session's own rules, and its caller's ALWAYS rules in its workspace."""
        return await self._store.rules_for(
            session_id=session.id, caller=session.owner, workspace=session.workspace
        )

    async def decide_by_rule(
        self, active: ActiveTurn, approval: t.ApprovalRequest, *, deny_only: bool = False
    ) -> RuleDecision | None:
        """What the rules say of the action (as clients would see it); if anything, say so.
        With `deny_only`, only a rule that denies it counts (what a hook allowed)."""
        seen = redact_event(t.TurnEvent(approval_request=approval)).approval_request
        found = verdict_on(await self.rules_of(active.session), seen)
        if found is None or (deny_only and found.allowed):
            return None
        # Asked while the turn runs: in a workflow, of the step running now.
        asked = t.TurnEvent(step=active.step) if active.step is not None else t.TurnEvent()
        await announce_rule(self._log, active, approval.request_id, found, asked)
        return RuleDecision(found.allowed, rule_shown(found.rule))

    # Parking

    async def park(
        self,
        active: ActiveTurn,
        parked: Parked,
        *,
        parking: tuple[t.TurnEvent, Sequence[TurnWrite]],
    ) -> tuple[dict[str, Resolution], list[PendingRecord]]:
        """Store and announce the run's requests; a rule approves those it covers at once.

        When one stays open, `parking` (an event, and what is written with it: the turn
        parked) goes after the announcements, and the requests are stored with them: one
        transaction, so whatever a client has seen can be answered, and a process that dies
        before it leaves no request behind. Returns the results of the requests rules
        approved, and every request as stored (none when none is left open). Call with
        the session's lock held.
        """
        sid, tid = active.session_id, active.turn_id
        rules = await self.rules_of(active.session)
        wait = active.session.approval_timeout
        if wait is None and self._approval_timeout:
            wait = self._approval_timeout.total_seconds()
        expires = time.time() + wait if wait else None
        writes: list[PendingWrite] = []
        settled: dict[str, Resolution] = {}
        to_announce: list[t.TurnEvent] = []
        for event in parked.requests:
            # As clients will see it: a rule covers what the user saw, and the stored copy
            # is what GetSession shows (as stored in the log: numbered).
            redact_event(event)
            if expires is not None:
                stamp_expiry(event, expires)
            request_id = request_id_of(event)
            record = PendingRecord(
                session_id=sid,
                request_id=request_id,
                turn_id=tid,
                event=event.SerializeToString(),
                expires=expires,
            )
            found = None
            if event.HasField("approval_request"):
                found = verdict_on(rules, event.approval_request)
                offer(event.approval_request)
            if found is not None:
                outcome = await announce_rule(self._log, active, request_id, found, event)
                assert outcome.result is not None
                record.resolution = outcome.to_json()
                settled[request_id] = outcome.result
                writes.append(PendingWrite(record))
            else:
                writes.append(PendingWrite(record, announced=event))
                to_announce.append(event)
        if not to_announce:
            await self._store.put_pending([w.record for w in writes])
            return settled, []
        fence = active.rec.epoch
        for event in to_announce:
            self._log.emit(sid, tid, event, fence=fence)
        event, also = parking
        await self._log.commit(sid, tid, event, fence=fence, writes=(*writes, *also))
        stored = []
        for write in writes:  # each as the store keeps it
            announced = write.announced
            record = write.record
            if announced is not None:
                record.event = announced.SerializeToString()
            stored.append(record)
        return settled, stored

    # Asking while the turn runs

    async def ask_now(self, active: ActiveTurn, question: t.Question) -> AnswerResult:
        """Store and announce `question`, then wait for its resolution (see
        `TurnIO.ask_now`): it is followed in the session's log, where an answer given to
        any process arrives. Past its expiry it is resolved unanswered here."""
        sid, tid = active.session_id, active.turn_id
        wait = active.session.approval_timeout
        if wait is None and self._approval_timeout:
            wait = self._approval_timeout.total_seconds()
        expires = time.time() + wait if wait else None
        event = redact_event(t.TurnEvent(question=question))
        if expires is not None:
            stamp_expiry(event, expires)
        record = PendingRecord(
            session_id=sid,
            request_id=question.request_id,
            turn_id=tid,
            event=event.SerializeToString(),
            expires=expires,
        )
        # Stored with its announcement, as announced (numbered): one transaction.
        stored = PendingWrite(record, announced=event)
        asked = await self._log.commit(sid, tid, event, fence=active.rec.epoch, writes=(stored,))
        record.event = asked.SerializeToString()
        resolution = await self._resolution_of(sid, question.request_id, asked.seq, expires)
        if resolution is None:
            await self._expire(record)
            resolution = await self._resolution_of(sid, question.request_id, asked.seq, None)
        if resolution is None or resolution.via == "withdrawn":
            return AnswerResult()
        values = None
        if resolution.HasField("values"):
            values = json_format.MessageToDict(resolution.values)
        return AnswerResult(tuple(resolution.answers), values, resolution.declined)

    async def _resolution_of(
        self, session_id: str, request_id: str, after_seq: int, expires: float | None
    ) -> t.Resolution | None:
        """The request's `resolution` from the log, once it is there; None at `expires`."""
        events = self._log.read(session_id, after_seq=after_seq, follow=True)
        loop = asyncio.get_running_loop()
        until = None if expires is None else loop.time() + expires - time.time()
        try:
            async with asyncio.timeout_at(until):
                async for event in events:
                    if event.HasField("resolution") and event.resolution.request_id == request_id:
                        return event.resolution
        except TimeoutError:
            return None
        finally:
            await events.aclose()
        return None

    # Deadlines of parked turns

    async def arm(
        self, rec: TurnRecord, parked: Sequence[PendingRecord] | None = None
    ) -> Answered | None:
        """File the parked turn's next deadline: its own, or its first request's expiry.

        Only the turn's ids are kept until then: a parked turn holds nothing in memory.
        Where processes share the store, its requests may all have been answered
        elsewhere while it parked (the answerer found it still running and left it): then
        nothing is filed, and what the turn resumes with is returned. `parked`: its
        requests as it just parked them, with the session's lock held since: where one
        process owns the store, no one else can have answered them, and they are not read
        back.
        """
        sid, tid = rec.session_id, rec.turn_id
        if parked is not None and not self._store.shared:
            requests = list(parked)
        else:
            requests = await self._store.list_pending(sid, turn_id=tid, open_only=False)
        answered = Answered.of(requests)
        times = [p.expires for p in requests if p.resolution is None and p.expires is not None]
        if rec.deadline is not None and answered is None:
            times.append(rec.deadline)
        if times:
            self._deadlines.set(_key(sid, tid), min(times), partial(self.check_deadlines, sid, tid))
        else:
            self._deadlines.clear(_key(sid, tid))
        return answered

    def disarm(self, session_id: str, turn_id: str) -> None:
        self._deadlines.clear(_key(session_id, turn_id))

    async def check_deadlines(self, session_id: str, turn_id: str) -> None:
        """End the parked turn if its deadline passed, else time out its expired requests;
        file its next deadline here if it is still parked."""
        try:
            rec = await self._store.get_turn(session_id, turn_id)
            if rec is None or rec.state != TurnState.PARKED:
                return
            if rec.deadline is not None and time.time() >= rec.deadline:
                await self.listener.expired(session_id, turn_id)
                return
            for p in await self._store.list_pending(session_id, turn_id=turn_id):
                if p.expires is not None and p.expires <= time.time():
                    await self._expire(p)
            rec = await self._store.get_turn(session_id, turn_id)
            if rec is not None and rec.state == TurnState.PARKED:
                if _key(session_id, turn_id) not in self._deadlines:
                    await self.arm(rec)
        except Exception:
            # The turn stays parked and answerable; its deadline is filed again on restart.
            log.exception("parked_deadline_failed", turn_id=turn_id)

    async def _expire(self, pending: PendingRecord) -> None:
        event = t.TurnEvent.FromString(pending.event)
        if event.HasField("approval_request"):
            outcome = Outcome.approval(
                pending.request_id,
                t.DECISION_DENY,
                reason="the approval request timed out",
                via="timeout",
            )
            text = f"Approval for {event.approval_request.detail!r} timed out: denied."
        else:
            outcome = Outcome.answer(pending.request_id, (), via="timeout")
            text = "The question timed out with no answer."
        if await self.resolve(pending, outcome, notice=text):
            log.info("request_timed_out", request_id=pending.request_id)

    # Ending requests

    async def resolve(
        self,
        pending: PendingRecord,
        outcome: Outcome,
        *,
        notice: str = "",
        rule: RuleRecord | None = None,
    ) -> bool:
        """Record the first resolution of a request; resume its turn once none is open.

        False when the request was already resolved (the caller lost the race). A `rule`
        (from a SESSION or ALWAYS decision) is stored only by the winner.
        """
        sid, tid = pending.session_id, pending.turn_id
        async with self._locks(sid):
            if not await self._store.resolve_pending(sid, pending.request_id, outcome.to_json()):
                return False
            if rule is not None:
                await self._store.add_rule(rule)
            if notice:
                self._log.emit(sid, tid, t.TurnEvent(notice=t.Notice(text=notice)))
            resolved = of_step(t.TurnEvent(resolution=outcome.event), pending.event)
            await self._log.commit(sid, tid, resolved)
            observe_wait(pending, outcome.event)
            await self._hand_over(sid, tid)
            return True

    async def _hand_over(self, session_id: str, turn_id: str) -> None:
        """Once none of the turn's requests is open: disarm its deadlines and tell the
        driver, with everything it needs of them. Call with the lock held."""
        requests = await self._store.list_pending(session_id, turn_id=turn_id, open_only=False)
        answered = Answered.of(requests)
        if answered is not None:
            self.disarm(session_id, turn_id)
            await self.listener.answered(session_id, turn_id, answered)

    async def withdraw(self, session_id: str, turn_id: str, *, fence: int) -> None:
        """Withdraw the turn's open requests: it is ending, held at epoch `fence` here.
        Call with the lock held."""
        self.disarm(session_id, turn_id)
        for p in await self._store.list_pending(session_id, turn_id=turn_id):
            outcome = Outcome.withdrawn(p.request_id)
            if await self._store.resolve_pending(session_id, p.request_id, outcome.to_json()):
                event = of_step(t.TurnEvent(resolution=outcome.event), p.event)
                await self._log.commit(session_id, turn_id, event, fence=fence)
                observe_wait(p, outcome.event)

    async def settle(self, session_id: str, turn_id: str) -> None:
        """Complete the answers a dead process stored for a parked turn.

        It may have died after storing a resolution and before announcing it, or before
        resuming the turn it answered last: announce what is missing, then have the turn
        resumed if none of its requests is open.
        """
        sid, tid = session_id, turn_id
        async with self._locks(sid):
            rows = await self._store.list_pending(sid, turn_id=tid, open_only=False)
            resolved = [p for p in rows if p.resolution is not None]
            if not resolved:
                return
            session = await self._store.get_session(sid)
            last = session.last_seq if session is not None else 0
            since = await self._store.read_events(
                sid, after_seq=max(0, last - _SETTLE_SCAN), limit=_SETTLE_SCAN
            )
            announced = {
                event.resolution.request_id
                for event in (t.TurnEvent.FromString(row.data) for row in since)
                if event.HasField("resolution")
            }
            for p in resolved:
                if p.request_id not in announced:
                    assert p.resolution is not None
                    outcome = outcome_from_json(p.request_id, p.resolution)
                    event = of_step(t.TurnEvent(resolution=outcome.event), p.event)
                    await self._log.commit(sid, tid, event)
            answered = Answered.of(rows)
            if answered is not None:
                self.disarm(sid, tid)
                await self.listener.answered(sid, tid, answered)


def _key(session_id: str, turn_id: str) -> str:
    return f"{session_id}/{turn_id}"
