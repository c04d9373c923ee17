"""Prometheus metrics: every collector Blitz exports, on a registry of its own.

The core records into these where each thing happens (a turn starts, a batch of events is
stored, a request is resolved, a model call is recorded), through the small functions
below, which know the label names so that the hooks stay one line. The gauges of what is
live right now (turns running and parked, open subscriptions) are not kept by hand: each
open core registers a function that counts them (`count_live`), and a scrape sums those.
So a parked turn that recovery loads after a restart is counted like any other.

Every RPC is counted under the names grpc's Prometheus interceptors use
(`grpc_server_handled_total`, ...), once per call, by the one adapter both wires share
(`blitz.transport.calls`, through `RpcMetrics`): a dashboard made for gRPC servers sees the
Connect calls too.

Under `blitz serve --workers N` the processes share their values through files
(prometheus-client's multiprocess mode: `blitz.workers` points PROMETHEUS_MULTIPROC_DIR at
an empty folder before this module is imported, which the library reads), and the first
process's scrape adds them all up. Then each gauge says how its processes' values combine
(`multiprocess_mode`), a gauge read by a function is written to the files every second
instead (`count_live`), and the `process_*` and `python_gc_*` series are not shown: they
would be one process's.

`asgi_app` serves the registry on the metrics port (`blitz.server`). docs/operations.md
lists every metric. A leaf: it imports nothing of Blitz, and it never reads the
environment. Recording must stay cheap: the event pipeline calls it once per batch, the
transports once per call.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import platform
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
    values,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

__all__ = [
    "REGISTRY",
    "SHARED",
    "LiveCounts",
    "RpcMetrics",
    "asgi_app",
    "command_finished",
    "count_live",
    "events_appended",
    "hook_ran",
    "model_call",
    "process_ended",
    "request_resolved",
    "store_write",
    "tool_call",
    "turn_finished",
    "turn_started",
    "webhook_attempt",
    "webhook_outbox",
]

# One series per counter, not a second `_created` one beside it.
disable_created_metrics()

# Whether this process shares its values with the other workers (see the module doc): the
# library chose when it was imported.
SHARED: bool = getattr(values.ValueClass, "_multiprocess", False)

REGISTRY = CollectorRegistry()
for _standard in (ProcessCollector, PlatformCollector, GCCollector):
    _standard(registry=REGISTRY)

try:
    _VERSION = importlib.metadata.version("blitz-server")
except importlib.metadata.PackageNotFoundError:  # running from a checkout, not installed
    _VERSION = "unknown"

_BUILD_INFO = Gauge(
    "blitz_build_info",
    "Always 1, labelled with the server's version and the Python it runs on.",
    ["version", "python"],
    multiprocess_mode="max",
    registry=REGISTRY,
)
_BUILD_INFO.labels(_VERSION, platform.python_version()).set(1)

# Every RPC, on gRPC and Connect alike, named as grpc's Prometheus interceptors name them.
_RPC_LABELS = ["grpc_type", "grpc_service", "grpc_method"]
_RPC_STARTED = Counter(
    "grpc_server_started_total",
    "RPCs started, on gRPC and Connect alike.",
    _RPC_LABELS,
    registry=REGISTRY,
)
_RPC_HANDLED = Counter(
    "grpc_server_handled_total",
    "RPCs ended, by their status code: OK, or the error's (InvalidArgument, Unavailable, ...).",
    [*_RPC_LABELS, "grpc_code"],
    registry=REGISTRY,
)
_RPC_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Time of one RPC, from its start to its end (a stream's whole life).",
    _RPC_LABELS,
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
    registry=REGISTRY,
)
_RPC_RECEIVED = Counter(
    "grpc_server_msg_received_total",
    "Request messages received (one per call: every stream is server-streaming).",
    _RPC_LABELS,
    registry=REGISTRY,
)
_RPC_SENT = Counter(
    "grpc_server_msg_sent_total",
    "Response messages sent: a unary call's answer, or a stream's messages.",
    _RPC_LABELS,
    registry=REGISTRY,
)

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
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
_TURNS_PARKED = Gauge(
    "blitz_turns_parked",
    "Turns parked in this process now, waiting on approvals or answers.",
    # On a shared store each process counts every process's parked turns (from the store).
    multiprocess_mode="livemax",
    registry=REGISTRY,
)
_STEPS_WAITING = Gauge(
    "blitz_agent_steps_waiting",
    "Steps of turns' agent work waiting for the calls people wait on, and for their turn"
    " of the event loop (core/driver/interactions.py): above a few, the server is short of CPU.",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
_WATCHERS = Gauge(
    "blitz_watchers",
    "Open live subscriptions to a session's events (RunTurn and following Watch streams).",
    multiprocess_mode="livesum",
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
    " (approval or question) and how it ended (decide, answer, link, slack, rule, hook,"
    " timeout, withdrawn).",
    ["kind", "via"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600),
    registry=REGISTRY,
)
_DECISIONS = Counter(
    "blitz_decisions_total",
    "Approval requests and questions resolved, by kind, how (via: decide, answer, link,"
    " slack, rule, hook, timeout, withdrawn) and what was decided (once, session, always, deny;"
    " answered, declined, unanswered).",
    ["kind", "via", "decision"],
    registry=REGISTRY,
)
_TOOL_CALL = Histogram(
    "blitz_tool_call_seconds",
    "Time of one tool call of the built-in agent, from its start to its return (not the"
    " wait for its approval), by tool and outcome (ok, retried, error).",
    ["tool", "outcome"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
    registry=REGISTRY,
)
_COMMAND = Histogram(
    "blitz_command_seconds",
    "Time of one shell command run for a turn (run_command, an ACP agent's terminal), from"
    " its start to its end, by outcome: ok (exit 0), failed (another exit), timeout.",
    ["outcome"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
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
_HOOK_RUNS = Counter(
    "blitz_hook_runs_total",
    "Hook runs (TestHook's included), by event, kind (command or http) and what came of each:"
    " none, allow, deny, ask, continue, or failed (whatever it failing made of it).",
    ["event", "kind", "decision"],
    registry=REGISTRY,
)
_HOOK_RUN = Histogram(
    "blitz_hook_run_seconds",
    "Time of one hook run, from its start to its answer or its failure, by event and kind.",
    ["event", "kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600),
    registry=REGISTRY,
)
_STORE_WRITE = Histogram(
    "blitz_store_write_seconds",
    "Time of one store write, by operation (append_events: one batch of the event log).",
    ["operation"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
    registry=REGISTRY,
)
_WEBHOOK_ATTEMPTS = Counter(
    "blitz_webhook_delivery_attempts_total",
    "Webhook delivery attempts, by what came of each: delivered (2xx), retried (tried again"
    " later), failed (given up: its retry window passed, or a ping's one attempt failed),"
    " gone (410).",
    ["outcome"],
    registry=REGISTRY,
)
_WEBHOOK_DELIVERIES = Counter(
    "blitz_webhook_deliveries_finished_total",
    "Webhook deliveries ended, once each, by their last attempt's outcome: delivered,"
    " failed or gone.",
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
    # Every process counts the whole store: the processes' counts are the same count.
    multiprocess_mode="livemax",
    registry=REGISTRY,
)
_WEBHOOK_OLDEST = Gauge(
    "blitz_webhook_outbox_oldest_seconds",
    "Age of the oldest event waiting at each stage (0 when none waits).",
    ["stage"],
    multiprocess_mode="livemax",
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
_LIVE_GAUGES = (
    (_TURNS_RUNNING, "turns_running"),
    (_TURNS_PARKED, "turns_parked"),
    (_WATCHERS, "watchers"),
    (_STEPS_WAITING, "agent_steps_waiting"),
)
# How often a shared process writes its live counts to the files (seconds).
_PUBLISH_EVERY = 1.0


def _live_sum(field: str) -> Callable[[], float]:
    return lambda: float(sum(getattr(count(), field) for count in list(_live)))


if not SHARED:
    for _gauge, _field in _LIVE_GAUGES:
        _gauge.set_function(_live_sum(_field))


def _publish_live() -> None:
    """Write the live counts where the other processes' scrape reads them (shared mode)."""
    counts = [count() for count in list(_live)]
    for gauge, field in _LIVE_GAUGES:
        gauge.set(sum(getattr(count, field) for count in counts))


class _Publisher:
    """Writes the live counts now and every `_PUBLISH_EVERY` s, on the loop that counts
    them (a timer of the loop's, no task), until stopped."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._timer: asyncio.TimerHandle | None = None
        self._publish()

    def _publish(self) -> None:
        _publish_live()
        self._timer = self._loop.call_later(_PUBLISH_EVERY, self._publish)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        _publish_live()


def count_live(source: Callable[[], LiveCounts]) -> Callable[[], None]:
    """Count what `source` reports in the live gauges, until the returned function is called.

    A shared process (under `--workers`) must call it on its event loop: the counts are
    written from there every second.
    """
    _live.add(source)
    publisher = _Publisher(asyncio.get_running_loop()) if SHARED else None

    def uncount() -> None:
        _live.discard(source)
        if publisher is not None:
            publisher.stop()

    return uncount


class RpcMetrics:
    """One RPC's series, made once per method so that a call costs a few increments and no
    lookup of its labels; the transports count every call through one (`transport.calls`)."""

    __slots__ = ("_handled", "_labels", "_received", "_seconds", "_sent", "_started")

    def __init__(self, service: str, method: str, *, streaming: bool) -> None:
        self._labels = ("server_stream" if streaming else "unary", service, method)
        self._started = _RPC_STARTED.labels(*self._labels)
        self._received = _RPC_RECEIVED.labels(*self._labels)
        self._sent = _RPC_SENT.labels(*self._labels)
        self._seconds = _RPC_SECONDS.labels(*self._labels)
        self._handled: dict[str, Any] = {}

    def started(self) -> None:
        """A call came in, with its one request."""
        self._started.inc()
        self._received.inc()

    def sent(self, messages: int) -> None:
        self._sent.inc(messages)

    def handled(self, code: str, seconds: float) -> None:
        """The call ended with `code` (gRPC's name: OK, InvalidArgument, ...)."""
        handled = self._handled.get(code)
        if handled is None:
            handled = self._handled[code] = _RPC_HANDLED.labels(*self._labels, code)
        handled.inc()
        self._seconds.observe(seconds)


# Each labelled series, by its metric and label values, once looked up: the library's
# `labels()` checks its arguments and takes a lock on every call, a few microseconds that
# every stored batch and every model call paid several times over.
_SERIES: dict[tuple[object, tuple[str, ...]], Any] = {}


def _series(metric: Counter | Gauge | Histogram, *values: str) -> Any:
    """`metric.labels(*values)`, looked up in a dict after its first time."""
    key = (metric, values)
    found = _SERIES.get(key)
    if found is None:
        found = _SERIES[key] = metric.labels(*values)
    return found


def turn_started(kind: str) -> None:
    _series(_TURNS_STARTED, kind).inc()


def turn_finished(reason: str | None) -> None:
    """A turn's `finished` is in the log; `reason` is its error's, None when it answered."""
    _series(_TURNS_FINISHED, "error" if reason else "ok", reason or "none").inc()


def events_appended(kinds: Iterable[str]) -> None:
    """One stored batch, as the kinds of its events."""
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    for kind, n in counts.items():
        _series(_EVENTS_APPENDED, kind).inc(n)


def store_write(operation: str, seconds: float) -> None:
    _series(_STORE_WRITE, operation).observe(seconds)


def request_resolved(kind: str, via: str, decision: str, waited: float | None) -> None:
    """A request's resolution; `waited` is None when its announcement's time is unknown."""
    _series(_DECISIONS, kind, via, decision).inc()
    if waited is not None:
        _series(_REQUEST_WAIT, kind, via).observe(max(0.0, waited))


def tool_call(tool: str, outcome: str, seconds: float) -> None:
    _series(_TOOL_CALL, tool, outcome).observe(max(0.0, seconds))


def command_finished(outcome: str, seconds: float) -> None:
    _series(_COMMAND, outcome).observe(max(0.0, seconds))


def hook_ran(event: str, kind: str, decision: str, seconds: float) -> None:
    """One hook run: `kind` command or http; `decision` none, allow, deny, ask, continue,
    or failed."""
    _series(_HOOK_RUNS, event, kind, decision).inc()
    _series(_HOOK_RUN, event, kind).observe(max(0.0, seconds))


def model_call(model: str, seconds: float | None, tokens: Mapping[str, int], cost: float) -> None:
    """One model call's ledger entry; `seconds` is None when its start was not seen."""
    if seconds is not None:
        _series(_MODEL_CALL, model).observe(seconds)
    for kind, n in tokens.items():
        _series(_MODEL_TOKENS, model, kind).inc(n)
    _series(_MODEL_COST, model).inc(cost)


def webhook_attempt(outcome: str, seconds: float, lag: float | None = None) -> None:
    """One attempt; `lag`, for a delivered one, from its event's storing to now. Any outcome
    but `retried` ends its delivery."""
    _series(_WEBHOOK_ATTEMPTS, outcome).inc()
    if outcome != "retried":
        _series(_WEBHOOK_DELIVERIES, outcome).inc()
    _series(_WEBHOOK_ATTEMPT, outcome).observe(max(0.0, seconds))
    if lag is not None:
        _WEBHOOK_LAG.observe(max(0.0, lag))


def webhook_outbox(stage: str, depth: int, oldest_age: float) -> None:
    """The outbox as last counted (the dispatcher counts it every few seconds)."""
    _series(_WEBHOOK_OUTBOX, stage).set(depth)
    _series(_WEBHOOK_OLDEST, stage).set(max(0.0, oldest_age))


def process_ended(pid: int) -> None:
    """A worker process ended (shared mode): its live gauges are no longer shown; its
    counters stay in the sums, as what it did."""
    if SHARED:
        mark_process_dead(pid)


def asgi_app() -> Any:
    """The ASGI app that answers a scrape (any path; Prometheus asks for /metrics): this
    process's registry, or in shared mode every process's values, added up."""
    if not SHARED:
        return make_asgi_app(registry=REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    PlatformCollector(registry=registry)
    return make_asgi_app(registry=registry)
