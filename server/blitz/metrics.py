"""Prometheus metrics: every collector Blitz exports, on a registry of its own.

The core records into these where each thing happens (a turn starts, a batch of events is
stored, a request is resolved, a model call is recorded), through the small functions
below, which know the label names so that the hooks stay one line. The gauges of what is
live right now (turns running and parked, open subscriptions) are not kept by hand: each
open core registers a function that counts them (`count_live`), and a scrape sums those.
So a parked turn that recovery loads after a restart is counted like any other.

`asgi_app` serves the registry on the metrics port (`blitz.server`). docs/operations.md
lists every metric. A leaf: it imports nothing of Blitz, and it never reads the
environment. Recording must stay cheap: the event pipeline calls it once per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    make_asgi_app,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

__all__ = [
    "REGISTRY",
    "LiveCounts",
    "asgi_app",
    "count_live",
    "events_appended",
    "model_call",
    "request_resolved",
    "store_write",
    "turn_finished",
    "turn_started",
    "webhook_attempt",
    "webhook_outbox",
]

# One series per counter, not a second `_created` one beside it.
disable_created_metrics()

REGISTRY = CollectorRegistry()
for _standard in (ProcessCollector, PlatformCollector, GCCollector):
    _standard(registry=REGISTRY)

_TURNS_STARTED = Counter(
    "blitz_turns_started_total",
    "Turns started, by kind: main, aside or command.",
    ["kind"],
    registry=REGISTRY,
)
_TURNS_FINISHED = Counter(
    "blitz_turns_finished_total",
    "Turns finished, by outcome (ok or error) and the error's reason (none when ok).",
    ["outcome", "reason"],
    registry=REGISTRY,
)
_TURNS_RUNNING = Gauge(
    "blitz_turns_running",
    "Turns running in this process now (asides included).",
    registry=REGISTRY,
)
_TURNS_PARKED = Gauge(
    "blitz_turns_parked",
    "Turns parked in this process now, waiting on approvals or answers.",
    registry=REGISTRY,
)
_STEPS_WAITING = Gauge(
    "blitz_agent_steps_waiting",
    "Steps of turns' agent work waiting for the calls people wait on, and for their turn"
    " of the event loop (core/driver/interactions.py): above a few, the server is short of CPU.",
    registry=REGISTRY,
)
_WATCHERS = Gauge(
    "blitz_watchers",
    "Open live subscriptions to a session's events (RunTurn and following Watch streams).",
    registry=REGISTRY,
)
_EVENTS_APPENDED = Counter(
    "blitz_events_appended_total",
    "Events stored in the event log, by kind (streamed text merged first counts once).",
    ["kind"],
    registry=REGISTRY,
)
_REQUEST_WAIT = Histogram(
    "blitz_request_wait_seconds",
    "Time from an approval request or question's announcement to its resolution, by kind"
    " (approval or question) and how it ended (decide, answer, link, slack, rule, timeout,"
    " withdrawn).",
    ["kind", "via"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600),
    registry=REGISTRY,
)
_MODEL_CALL = Histogram(
    "blitz_model_call_seconds",
    "Time of one model call, from the turn's check before it to its ledger entry"
    " (retries included), by the session's model name.",
    ["model"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320),
    registry=REGISTRY,
)
_MODEL_TOKENS = Counter(
    "blitz_model_tokens_total",
    "Tokens of model calls, by model and kind: input, cached, cache_write, output.",
    ["model", "kind"],
    registry=REGISTRY,
)
_MODEL_COST = Counter(
    "blitz_model_cost_usd_total",
    "Cost of model calls in US dollars, by model (0 for a free or unpriced model).",
    ["model"],
    registry=REGISTRY,
)
_STORE_WRITE = Histogram(
    "blitz_store_write_seconds",
    "Time of one store write, by operation (append_events: one batch of the event log).",
    ["operation"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
    registry=REGISTRY,
)
_WEBHOOK_DELIVERIES = Counter(
    "blitz_webhook_deliveries_total",
    "Webhook delivery attempts, by outcome: delivered (2xx), retried (tried again later),"
    " failed (given up: its retry window passed, or a ping's one attempt failed), gone (410).",
    ["outcome"],
    registry=REGISTRY,
)
_WEBHOOK_ATTEMPT = Histogram(
    "blitz_webhook_attempt_seconds",
    "Time of one webhook attempt, from the request's start to the answer's headers or the"
    " failure, by outcome.",
    ["outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
_WEBHOOK_LAG = Histogram(
    "blitz_webhook_delivery_lag_seconds",
    "Time from an event's storing to the 2xx of its webhook delivery (retries included).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600, 24 * 3600),
    registry=REGISTRY,
)
_WEBHOOK_OUTBOX = Gauge(
    "blitz_webhook_outbox_depth",
    "What waits to be told, in the whole store, by stage: events (stored, not yet matched to"
    " webhooks) and deliveries (pending).",
    ["stage"],
    registry=REGISTRY,
)
_WEBHOOK_OLDEST = Gauge(
    "blitz_webhook_outbox_oldest_seconds",
    "Age of the oldest event waiting at each stage (0 when none waits).",
    ["stage"],
    registry=REGISTRY,
)


@dataclass(frozen=True)
class LiveCounts:
    """What one core holds right now."""

    turns_running: int
    turns_parked: int
    watchers: int
    agent_steps_waiting: int = 0


_live: set[Callable[[], LiveCounts]] = set()


def _live_sum(field: str) -> Callable[[], float]:
    return lambda: float(sum(getattr(count(), field) for count in list(_live)))


_TURNS_RUNNING.set_function(_live_sum("turns_running"))
_TURNS_PARKED.set_function(_live_sum("turns_parked"))
_WATCHERS.set_function(_live_sum("watchers"))
_STEPS_WAITING.set_function(_live_sum("agent_steps_waiting"))


def count_live(source: Callable[[], LiveCounts]) -> Callable[[], None]:
    """Count what `source` reports in the live gauges, until the returned function is called."""
    _live.add(source)
    return lambda: _live.discard(source)


def turn_started(kind: str) -> None:
    _TURNS_STARTED.labels(kind).inc()


def turn_finished(reason: str | None) -> None:
    """A turn's `finished` is in the log; `reason` is its error's, None when it answered."""
    _TURNS_FINISHED.labels("error" if reason else "ok", reason or "none").inc()


def events_appended(kinds: Iterable[str]) -> None:
    """One stored batch, as the kinds of its events."""
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    for kind, n in counts.items():
        _EVENTS_APPENDED.labels(kind).inc(n)


def store_write(operation: str, seconds: float) -> None:
    _STORE_WRITE.labels(operation).observe(seconds)


def request_resolved(kind: str, via: str, waited: float) -> None:
    _REQUEST_WAIT.labels(kind, via).observe(max(0.0, waited))


def model_call(model: str, seconds: float | None, tokens: Mapping[str, int], cost: float) -> None:
    """One model call's ledger entry; `seconds` is None when its start was not seen."""
    if seconds is not None:
        _MODEL_CALL.labels(model).observe(seconds)
    for kind, n in tokens.items():
        _MODEL_TOKENS.labels(model, kind).inc(n)
    _MODEL_COST.labels(model).inc(cost)


def webhook_attempt(outcome: str, seconds: float, lag: float | None = None) -> None:
    """One attempt; `lag`, for a delivered one, from its event's storing to now."""
    _WEBHOOK_DELIVERIES.labels(outcome).inc()
    _WEBHOOK_ATTEMPT.labels(outcome).observe(max(0.0, seconds))
    if lag is not None:
        _WEBHOOK_LAG.observe(max(0.0, lag))


def webhook_outbox(stage: str, depth: int, oldest_age: float) -> None:
    """The outbox as last counted (the dispatcher counts it every few seconds)."""
    _WEBHOOK_OUTBOX.labels(stage).set(depth)
    _WEBHOOK_OLDEST.labels(stage).set(max(0.0, oldest_age))


def asgi_app() -> Any:
    """The ASGI app that answers a scrape (any path; Prometheus asks for /metrics)."""
    return make_asgi_app(registry=REGISTRY)
