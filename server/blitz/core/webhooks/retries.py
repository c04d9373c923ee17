"""What an attempt's answer means: delivered, tried again later (when), or given up.

A 2xx is delivered. A 410 Gone gives the delivery up and disables its webhook (GONE):
the receiver says it is not coming back. Any other answer, and no answer (a timeout, a
refused address, a failed connection), is tried again after a backoff: `first_delay`
doubling with each attempt up to `max_delay`, times a jitter of ±20% so that receivers
coming back are not hit by every delivery at once, or later if the receiver's Retry-After
says so. A delivery whose next attempt would fall past its deadline (made at
`--webhook-retry-window` after it) is given up. Every failed attempt counts against its
webhook: at `pause_after` in a row the webhook is paused (FAILING). A ping is tried once
and counts for nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from blitz.core.webhooks.payloads import PING
from blitz.core.webhooks.sending import Answer
from blitz.store import AttemptOutcome, DeliveryRecord, DeliveryState

__all__ = ["Retries"]


@dataclass(frozen=True)
class Retries:
    first_delay: float = 5.0
    max_delay: float = 3600.0
    window: float = 24 * 3600.0
    pause_after: int = 20
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def backoff(self, tries: int, retry_after: float | None = None) -> float:
        """Seconds before the attempt after the `tries`-th failed one."""
        base = min(self.max_delay, self.first_delay * 2 ** max(0, tries - 1))
        delay = base * self.rng.uniform(1 - self.jitter, 1 + self.jitter)
        return max(delay, retry_after or 0.0)

    def judge(
        self, delivery: DeliveryRecord, answer: Answer, *, tries: int, now: float
    ) -> AttemptOutcome:
        """The outcome of the `tries`-th attempt of `delivery`, which got `answer`."""
        ping = delivery.kind == PING
        if 200 <= answer.status < 300 and not answer.error:
            return AttemptOutcome(
                state=DeliveryState.DELIVERED, webhook="none" if ping else "success", now=now
            )
        if answer.status == 410:
            return AttemptOutcome(
                state=DeliveryState.FAILED,
                webhook="none" if ping else "gone",
                reason="the receiver answered 410 Gone",
                now=now,
            )
        if ping:
            return AttemptOutcome(state=DeliveryState.FAILED, now=now)
        last = f"HTTP {answer.status}" if answer.status else answer.error
        reason = f"{self.pause_after} failed attempts in a row; the last: {last}"
        after = now + self.backoff(tries, answer.retry_after)
        if after > delivery.deadline:
            return AttemptOutcome(
                state=DeliveryState.FAILED,
                webhook="failure",
                pause_after=self.pause_after,
                reason=reason,
                now=now,
            )
        return AttemptOutcome(
            state=DeliveryState.PENDING,
            next_attempt=after,
            webhook="failure",
            pause_after=self.pause_after,
            reason=reason,
            now=now,
        )
