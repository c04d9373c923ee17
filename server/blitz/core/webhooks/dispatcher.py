"""The dispatcher: the outbox made into deliveries, and deliveries sent, retried, recorded.

Three owned tasks, while the server runs (`async with Dispatcher(...)`):

1. **Expanding.** The event log says when a batch put an event in the outbox (the store
   wrote its row in the transaction that stored the event). After a short pause, so that
   a burst's events go together, the dispatcher takes outbox rows and stores their
   deliveries in their place, one transaction per batch (`Store.expand_outbox`, with
   `matching.expander`). A poll every few seconds takes what another process left
   (it died between storing an event and expanding it).
2. **Delivering.** It claims due deliveries, up to its free workers (`--webhook-workers`),
   at most `PER_WEBHOOK` in flight to one webhook and at most its share of the workers
   to one principal, round-robin across principals (`shares.py`), so that hanging
   receivers hold a few workers and no more, and never all of them: another principal's
   delivery finds a free worker at once. Claims are leases in the store; the store hands
   out only the first delivery still to go of each (webhook, session), so a session's
   events reach a receiver in seq order. Each is one supervised task: sign, POST
   (`sending.py`), judge the answer
   (`retries.py`) and record it (`Store.record_attempt`), which lets the next of its
   session go. It wakes when there is something new, when a retry falls due, and once a
   second to see what other processes left (a dead holder's lease ends).
3. **Sweeping**, every few seconds: deliveries past their retry window are given up,
   the outbox's depth and oldest age are counted for the metrics, and once an hour the
   deliveries that ended a week ago are deleted.

When an attempt stops its webhook (the run of failures reached `--webhook-pause-after`,
or a 410), each session with a delivery of it still waiting gets a `notice` event
saying so. Every log line of an attempt carries its `delivery_id` and `webhook_id`.

At close the tasks are cancelled and awaited, and the deliveries still in flight let go,
so that the next process takes them at once; on a store no other process uses, leases
left by a process that died are let go at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
import uuid
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

import structlog

from blitz import metrics
from blitz.core.events.event_log import EventLog
from blitz.core.supervisor import Supervisor, raise_if_cancelled
from blitz.core.webhooks.matching import expander, new_delivery_id
from blitz.core.webhooks.payloads import PING, ping_body
from blitz.core.webhooks.retries import Retries
from blitz.core.webhooks.sending import Sender
from blitz.core.webhooks.shares import Shares
from blitz.core.webhooks.signing import signed_headers, signing_secrets
from blitz.outbound import AddressPolicy
from blitz.store import (
    AttemptRecord,
    DeliveryRecord,
    DeliveryState,
    Store,
    WebhookRecord,
)
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

if TYPE_CHECKING:
    from blitz.core.links.offers import LinkMaker

__all__ = ["Dispatcher"]

log = structlog.get_logger(__name__)

# Outbox rows taken per transaction (their bodies are made in it, on the loop's thread).
_TAKE = 100
# Seconds a burst's events gather before they are expanded together.
_GATHER = 0.005
# While no webhook exists, the outbox is looked at no more often than this: its rows wait
# (the store keeps them 2 s), and a webhook made here is told at once (`webhook_made`).
_NONE_RECHECK = 1.0
# Seconds between polls: of the outbox (rows another process left), of due deliveries.
_OUTBOX_POLL = 5.0
_DELIVERY_POLL = 1.0
# Seconds between sweeps; deliveries that ended are kept this long; prunes this often.
_SWEEP = 5.0
_KEPT = 7 * 24 * 3600.0
_PRUNE = 3600.0
# A claimed delivery's lease beyond the attempt's own limit.
_LEASE_MARGIN = 5.0
# Sessions told of a stopped webhook, at most.
_NOTICED = 100


class Dispatcher:
    """Delivers the webhook outbox (see the module doc)."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        replica: str,
        policy: AddressPolicy,
        timeout: float,
        retry: Retries,
        workers: int,
        public_url: str = "",
        links: LinkMaker | None = None,
    ) -> None:
        """`links`: what makes the approval links of a delivery (None: none)."""
        self._store = store
        self._log = log
        self._replica = replica
        self._policy = policy
        self._timeout = timeout
        self._retry = retry
        self._expand = expander(public_url=public_url, window=retry.window, links=links)
        self._sender = Sender(policy=policy, timeout=timeout)
        self._tasks = Supervisor("webhooks")
        self._attempts = Supervisor("webhook-attempts")
        self._written = asyncio.Event()
        self._due = asyncio.Event()
        # Deliveries in flight here, by webhook and by principal.
        self._shares = Shares(workers)
        # When retries recorded here fall due (a heap of Unix times).
        self._retries: list[float] = []
        # Until when (monotonic) the outbox is left alone: no webhook existed just now.
        self._none_until = 0.0

    @property
    def policy(self) -> AddressPolicy:
        return self._policy

    @property
    def window(self) -> float:
        return self._retry.window

    async def __aenter__(self) -> Dispatcher:
        if not self._store.shared:
            await self._store.release_all_deliveries()  # a dead process's: nobody else's
        await self._sender.__aenter__()
        self._log.on_outbox(self.outbox_written)
        self._written.set()  # what a process left before it died
        self._tasks.spawn(self._expanding(), name="webhook-outbox")
        self._tasks.spawn(self._delivering(), name="webhook-deliveries")
        self._tasks.spawn(self._sweeping(), name="webhook-sweep")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._log.on_outbox(None)
        try:
            await self._tasks.aclose()
            held = self._shares.held
            await self._attempts.aclose()
            if held:
                # Let go, so that the next process need not wait for the leases to end;
                # if it fails, they wait for their leases to end, which is only slower.
                try:
                    await asyncio.shield(self._store.release_deliveries(self._replica, held))
                except Exception:
                    log.exception("webhook_release_failed", deliveries=len(held))
        finally:
            await self._sender.__aexit__(None, None, None)

    # Wake-ups

    def outbox_written(self) -> None:
        """The event log stored an event a webhook may be told of. Not looked at while no
        webhook existed a moment ago (the expansion would only skip it): a webhook made
        here wakes the expansion itself, and one made elsewhere is seen by the poll."""
        if time.monotonic() >= self._none_until:
            self._written.set()

    def deliveries_due(self) -> None:
        """Deliveries may be due now (made, redelivered, a webhook resumed)."""
        self._due.set()

    def webhook_made(self) -> None:
        """A webhook was made here: the outbox is worth a look again at once."""
        self._none_until = 0.0
        self._written.set()

    # 1. Expanding

    async def _expanding(self) -> None:
        while True:
            raise_if_cancelled()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_OUTBOX_POLL):
                    await self._written.wait()
            self._written.clear()
            if time.monotonic() < self._none_until:
                continue  # none existed a moment ago: the rows wait for the next look
            await asyncio.sleep(_GATHER)
            try:
                while True:
                    done = await self._store.expand_outbox(_TAKE, self._expand, now=time.time())
                    if done.made:
                        self._due.set()
                    if not done.webhooks:
                        self._none_until = time.monotonic() + _NONE_RECHECK
                    if done.taken < _TAKE or not done.webhooks:
                        break
            except Exception:
                raise_if_cancelled()
                log.exception("webhook_outbox_failed")

    # 2. Delivering

    async def _delivering(self) -> None:
        while True:
            raise_if_cancelled()
            wait = _DELIVERY_POLL
            if self._retries:
                wait = max(0.0, min(wait, self._retries[0] - time.time()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._due.wait()
            self._due.clear()
            now = time.time()
            while self._retries and self._retries[0] <= now:
                heapq.heappop(self._retries)
            try:
                await self._claim()
            except Exception:
                raise_if_cancelled()
                log.exception("webhook_claim_failed")
                await asyncio.sleep(_DELIVERY_POLL)

    async def _claim(self) -> None:
        """Take due deliveries while workers are free, and start each.

        Another round follows one that found more than it could hold (a principal or a
        webhook reached its limit, so the next round skips it and looks further)."""
        while (free := self._shares.free) > 0:
            fair = self._shares.fairness()
            now = time.time()
            got = await self._store.claim_deliveries(
                self._replica,
                now=now,
                lease_until=now + self._timeout + _LEASE_MARGIN,
                limit=free,
                skip=self._shares.full_webhooks(),
                fair=fair,
            )
            surplus = []
            for delivery in self._shares.order(got):
                if not self._shares.take(delivery):
                    surplus.append(delivery.id)
                    continue
                self._attempts.spawn(self._attempt(delivery), name=f"webhook-{delivery.id}")
            if surplus:
                await self._store.release_deliveries(self._replica, surplus)
            per_principal = Counter(d.principal for d in got)
            bounded = bool(per_principal) and max(per_principal.values()) >= fair.each
            if not got or (len(got) < free and not surplus and not bounded):
                return

    async def _attempt(self, delivery: DeliveryRecord) -> None:
        """One attempt of a claimed delivery, recorded; then the next may go."""
        try:
            hook = await self._store.get_webhook(delivery.webhook_id)
            if hook is not None:
                await self._send(delivery, hook)
        finally:
            self._shares.let_go(delivery.id)
            self._due.set()

    async def _send(self, delivery: DeliveryRecord, hook: WebhookRecord) -> None:
        with structlog.contextvars.bound_contextvars(delivery_id=delivery.id, webhook_id=hook.id):
            started = time.time()
            headers = signed_headers(
                delivery.message_id,
                delivery.body,
                secrets=signing_secrets(hook, started),
                now=started,
            )
            answer = await self._sender.post(hook.url, delivery.body, headers)
            tries = delivery.tries + 1
            now = time.time()
            outcome = self._retry.judge(delivery, answer, tries=tries, now=now)
            if outcome.webhook == "success" and hook.failures == 0:
                outcome = replace(outcome, webhook="none")  # nothing to reset: one write less
            attempt = AttemptRecord(
                tries, started, answer.status, answer.latency, answer.error, answer.response
            )
            recorded = await self._store.record_attempt(
                delivery, attempt, owner=self._replica, outcome=outcome
            )
            if not recorded.written:
                log.warning("webhook_attempt_lost", reason="the delivery's lease ended")
                return
            name = _outcome_name(outcome.state, outcome.webhook)
            delivered = outcome.state is DeliveryState.DELIVERED
            lag = now - delivery.event_time if delivered and delivery.kind != PING else None
            metrics.webhook_attempt(name, answer.latency, lag)
            log.log(
                20 if delivered else 30,
                "webhook_attempt",
                outcome=name,
                attempt=tries,
                status=answer.status,
                latency_ms=round(answer.latency * 1000, 1),
                error=answer.error or None,
                kind=delivery.kind,
                session_id=delivery.session_id or None,
                seq=delivery.seq or None,
            )
            if outcome.state is DeliveryState.PENDING:
                heapq.heappush(self._retries, outcome.next_attempt)
            if recorded.stopped is not None:
                await self._stopped(recorded.stopped)

    async def ping(self, hook: WebhookRecord) -> DeliveryRecord:
        """Send a `ping` to `hook` now, once, here; the delivery with its attempt."""
        now = time.time()
        delivery = DeliveryRecord(
            id=new_delivery_id(),
            webhook_id=hook.id,
            message_id="msg_ping_" + uuid.uuid4().hex[:16],
            kind=PING,
            session_id="",
            turn_id="",
            seq=0,
            body=ping_body(hook.id, format=hook.format, now=now),
            state=DeliveryState.PENDING,
            tries=0,
            attempts=[],
            next_attempt=now,
            deadline=now + self._retry.window,
            event_time=now,
            create_time=now,
            lease_owner=self._replica,
            lease_until=now + self._timeout + _LEASE_MARGIN,
        )
        await self._store.add_delivery(delivery)
        await self._send(delivery, hook)
        return await self._store.get_delivery(delivery.id) or delivery

    async def _stopped(self, hook: WebhookRecord) -> None:
        """Tell the sessions waiting on `hook` that it stopped, and why."""
        log.warning(
            "webhook_stopped", state=wh.WebhookState.Name(hook.state), why=hook.state_reason
        )
        sessions = await self._store.pending_sessions(hook.id, limit=_NOTICED)
        if hook.session_id and hook.session_id not in sessions:
            sessions.append(hook.session_id)
        named = f"Webhook {hook.id}" + (f" ({hook.description})" if hook.description else "")
        if hook.state == wh.WEBHOOK_STATE_GONE:
            text = f"{named} is disabled: {hook.state_reason}. Nothing more is sent to it."
        else:
            text = (
                f"{named} is paused: {hook.state_reason}. Its deliveries wait, each for its"
                " retry window: resume it with UpdateWebhook (`blitz webhooks resume"
                f" {hook.id}`)."
            )
        notice = t.Notice(text=text, error=True)
        for session_id in sessions:
            if await self._store.get_session(session_id) is None:
                continue
            try:
                await self._log.commit(session_id, "", t.TurnEvent(notice=notice))
            except Exception:
                log.exception("webhook_notice_failed", session_id=session_id)

    # 3. Sweeping

    async def _sweeping(self) -> None:
        next_prune = time.monotonic()
        while True:
            try:
                now = time.time()
                if await self._store.expire_deliveries(now):
                    log.info("webhook_deliveries_given_up")
                stats = await self._store.outbox_stats()
                metrics.webhook_outbox("events", stats.events, _age(stats.oldest_event, now))
                oldest = _age(stats.oldest_pending, now)
                metrics.webhook_outbox("deliveries", stats.pending, oldest)
                if time.monotonic() >= next_prune:
                    next_prune = time.monotonic() + _PRUNE
                    await self._store.prune_deliveries(now - _KEPT)
            except Exception:
                raise_if_cancelled()
                log.exception("webhook_sweep_failed")
            raise_if_cancelled()
            await asyncio.sleep(_SWEEP)


def _age(then: float | None, now: float) -> float:
    return 0.0 if then is None else now - then


def _outcome_name(state: DeliveryState, webhook: str) -> str:
    if state is DeliveryState.DELIVERED:
        return "delivered"
    if webhook == "gone":
        return "gone"
    return "retried" if state is DeliveryState.PENDING else "failed"
