"""The Grafana dashboard in docs/grafana reads only metrics a running server exports.

Its panels' queries are PromQL; every metric name in them must be one the metrics port
shows (a family, or one of its samples: a counter's `_total`, a histogram's `_bucket`,
`_count`, `_sum`), scraped from a real server after calls on both wires and a turn whose
command was approved. Each label a query groups or filters by must be one of its metrics'
labels, where the scrape shows that metric's samples (`instance` and `job` are
Prometheus's own, `le` a histogram's).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from support.wire import open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.v1 import turn_pb2 as t

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "blitz.json"

# Names in PromQL that are not metrics: functions, aggregations, keywords.
_PROMQL = frozenset(
    "sum max min avg count rate increase irate histogram_quantile by without on ignoring"
    " group_left group_right bool and or unless offset topk bottomk label_values".split()
)
_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "gauge": ("",),
    "info": ("_info",),
}
_ADDED_BY_PROMETHEUS = {"instance", "job", "le"}


def _panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    found = []
    for panel in panels:
        found.append(panel)
        found += _panels(panel.get("panels", []))
    return found


def _queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in _panels(board["panels"])
        for target in panel.get("targets", [])
    ]


def _metrics_of(expr: str) -> set[str]:
    """The metric names in a query: its words, once labels, ranges, strings are taken out."""
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", bare)
    bare = re.sub(r"\b(?:by|without)\s*\([^)]*\)", "", bare)
    words = set(re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", bare))
    return {word for word in words if word not in _PROMQL}


def _labels_of(expr: str) -> set[str]:
    """The labels a query groups by or filters on."""
    grouped = re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr)
    matched = re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*[!=]~?\s*\"", expr)
    names = {name.strip() for group in grouped for name in group.split(",")} | set(matched)
    return {name for name in names if name} - _ADDED_BY_PROMETHEUS


async def _scrape(server: RunningServer) -> tuple[set[str], dict[str, set[str]]]:
    """The names the metrics port shows, and the labels each sample name has."""
    url = f"http://{server.settings.metrics_host}:{server.metrics_port}/metrics"
    async with httpx.AsyncClient() as client:
        text = (await client.get(url)).text
    names: set[str] = set()
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        names |= {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
        for sample in family.samples:
            names.add(sample.name)
            labels.setdefault(sample.name, set()).update(sample.labels)
    return names, labels


async def _exercised(settings: Settings) -> tuple[set[str], dict[str, set[str]]]:
    async with running_server(replace(settings, metrics_port=0)) as server:
        for kind in ("grpc", "connect"):
            wire = open_wire(kind, server)
            try:
                session = await wire.create_session()
                stream = wire.run(session.id, "$ echo dashboard")
                async for event in stream:
                    if event.HasField("approval_request"):
                        await wire.decide(session.id, event, t.DECISION_ONCE)
                    if event.HasField("finished"):
                        break
                await stream.aclose()
            finally:
                await wire.close()
        return await _scrape(server)


def test_the_dashboard_has_panels_for_what_operators_ask_first() -> None:
    read = set().union(*(_metrics_of(expr) for _, expr in _queries()))
    assert {
        "grpc_server_handled_total",
        "grpc_server_handling_seconds_bucket",
        "blitz_turns_started_total",
        "blitz_turns_parked",
        "blitz_tool_call_seconds_bucket",
        "blitz_decisions_total",
        "blitz_webhook_delivery_attempts_total",
        "blitz_build_info",
    } <= read


async def test_every_metric_the_dashboard_reads_is_one_a_server_exports(
    settings: Settings,
) -> None:
    exported, labelled = await _exercised(settings)
    for title, expr in _queries():
        metrics = _metrics_of(expr)
        assert metrics, f"{title}: no metric in {expr!r}"
        assert metrics <= exported, f"{title}: {sorted(metrics - exported)} not exported"
        seen = set().union(*(labelled.get(name, set()) for name in metrics))
        if seen:
            assert _labels_of(expr) <= seen, f"{title}: {sorted(_labels_of(expr) - seen)}"
