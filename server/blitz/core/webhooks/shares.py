"""The delivery workers shared between principals, so that one's dead receivers cannot
hold everyone's webhooks.

A process has `--webhook-workers` workers. A principal (a webhook's owner; the operator's
declared webhooks are one more, `DECLARED`) may hold at most its **share** of them:
`max(1, workers // (busy + 1))`, where `busy` counts the principals holding a worker
here, itself among them. The `+ 1` is room kept for one principal more: with Alice alone
busy she may hold half the workers, so Bob's first delivery finds a free worker at once,
however many of Alice's receivers hang; with both busy each may hold a third, and so on.
A principal over its share (the share shrinks as others arrive) takes nothing more until
its attempts end, which each does within `--webhook-timeout`. On top of that a webhook
holds at most `PER_WEBHOOK`, whoever owns it.

Claims are round-robin (`Fairness`): every principal's first due delivery, then every
one's second, with principals already busy after those that are not. `Shares` counts what
this process holds and says what a claim may take; it decides nothing about order within
a session, which the store keeps (docs/webhooks.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from blitz.store import DeliveryRecord
from blitz.store.webhook_records import Fairness

__all__ = ["PER_WEBHOOK", "Shares"]

# Deliveries in flight to one webhook at most, from this process.
PER_WEBHOOK = 8


class Shares:
    """What this process's workers hold, by webhook and by principal."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        # Deliveries held here, by id: (webhook, principal); and how many of each.
        self._held: dict[str, tuple[str, str]] = {}
        self._per_webhook: Counter[str] = Counter()
        self._per_principal: Counter[str] = Counter()

    @property
    def held(self) -> list[str]:
        """The ids of the deliveries held here."""
        return list(self._held)

    @property
    def free(self) -> int:
        return self._workers - len(self._held)

    def share(self, principal: str) -> int:
        """The most `principal` may hold here now (as if busy, if it is not yet)."""
        busy = len(self._per_principal) + (principal not in self._per_principal)
        return max(1, self._workers // (busy + 1))

    def fairness(self) -> Fairness:
        """What the next claim may take: none of a principal at its share, at most a
        newcomer's share of any one, the busy after the others."""
        busy = len(self._per_principal)
        return Fairness(
            skip=tuple(p for p, n in self._per_principal.items() if n >= self.share(p)),
            each=max(1, self._workers // (busy + 2)),
            busy=tuple(self._per_principal),
        )

    def full_webhooks(self) -> list[str]:
        return [hook for hook, n in self._per_webhook.items() if n >= PER_WEBHOOK]

    def order(self, claimed: Iterable[DeliveryRecord]) -> list[DeliveryRecord]:
        """`claimed` in the order they get a worker: round-robin across principals, the
        least busy first, each principal's in the order they fell due."""
        turns: Counter[str] = Counter()
        keyed: list[tuple[int, int, DeliveryRecord]] = []
        for delivery in sorted(claimed, key=lambda d: (d.next_attempt, d.seq)):
            turns[delivery.principal] += 1
            place = turns[delivery.principal] + self._per_principal[delivery.principal]
            keyed.append((place, len(keyed), delivery))
        return [delivery for _, _, delivery in sorted(keyed, key=lambda k: k[:2])]

    def take(self, delivery: DeliveryRecord) -> bool:
        """Hold `delivery` if a worker is free and neither its webhook nor its principal
        is at its limit; whether it was."""
        if (
            self.free <= 0
            or self._per_webhook[delivery.webhook_id] >= PER_WEBHOOK
            or self._per_principal[delivery.principal] >= self.share(delivery.principal)
        ):
            return False
        self._held[delivery.id] = (delivery.webhook_id, delivery.principal)
        self._per_webhook[delivery.webhook_id] += 1
        self._per_principal[delivery.principal] += 1
        return True

    def let_go(self, delivery_id: str) -> None:
        found = self._held.pop(delivery_id, None)
        if found is None:
            return
        webhook, principal = found
        for counts, key in ((self._per_webhook, webhook), (self._per_principal, principal)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]
