"""The tables `python -m bench` prints: every figure beside its target, then by size.

A verdict is `ok` or `MISS` for a figure with a target (bench/targets.py), blank for one
shown for information, and `n/a` for one that could not be measured. A figure measured on
the floor server too is printed beside the floor's, with the ratio, which is what its
target bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from bench.results import Result
from bench.targets import target_for

__all__ = ["by_size", "figures_table", "number"]

# Columns of the per-size tables: key in a row, heading.
_BY_SIZE = {
    "sessions": [
        ("size", "sessions"),
        ("burst_accepted_p99_ms", "accepted p99 ms"),
        ("burst_parked_p99_ms", "parked p99 ms"),
        ("burst_rate", "parked/s"),
        ("park_cpu_ms", "park CPU ms"),
        ("new_accepted_p99_ms", "new→accepted p99 ms"),
        ("decide_next_p99_ms", "Decide→next p99 ms"),
        ("resume_rate", "resumed/s"),
        ("resume_cpu_ms", "resume CPU ms"),
        ("rss_parked_mb", "RSS parked MB"),
    ],
    "parked": [
        ("count", "parked"),
        ("session_kb", "KB/session"),
        ("open_kb", "KB/turn open"),
        ("none_kb", "KB/turn none"),
        ("none_more_kb", "KB/turn none, N more"),
        ("bare_kb", "bare KB/stream"),
        ("open_rss_mb", "RSS open MB"),
        ("none_rss_mb", "RSS none MB"),
    ],
    # Blitz beside LangGraph's Agent Server (bench/scenarios/peer.py), figure by figure.
    "peer": [
        ("size", "turns"),
        ("park_cpu_ms", "park CPU ms"),
        ("langgraph_park_cpu_ms", "LangGraph"),
        ("resume_cpu_ms", "resume CPU ms"),
        ("langgraph_resume_cpu_ms", "LangGraph"),
        ("burst_rate", "parked/s"),
        ("langgraph_burst_rate", "LangGraph"),
        ("burst_parked_p99_ms", "parked p99 ms"),
        ("langgraph_burst_parked_p99_ms", "LangGraph"),
        ("parked_kb", "KB/parked turn"),
        ("langgraph_parked_kb", "LangGraph"),
    ],
}


def number(value: float | None) -> str:
    """A figure as a person reads it: thousands grouped, about three significant digits."""
    if value is None or math.isnan(value):
        return "n/a"
    value = round(float(value), 6)  # 10.000000001 is 10
    if value.is_integer():
        return f"{int(value):,}"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _grid(rows: list[list[str]], right: Iterable[int]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    aligned = set(right)
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if i in aligned else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def figures_table(results: Iterable[Result]) -> str:
    rows = [["scenario", "figure", "value", "unit", "floor", "÷ floor", "target", ""]]
    for result in results:
        for figure in result.figures:
            target = target_for(figure.key)
            verdict = ""
            if target is not None:
                met = target.met_by(figure.ratio if target.of_floor else figure.value)
                verdict = "n/a" if met is None else "ok" if met else "MISS"
            floored = not math.isnan(figure.floor)
            rows.append(
                [
                    result.scenario,
                    figure.label,
                    number(figure.value),
                    figure.unit,
                    number(figure.floor) if floored else "",
                    f"{number(figure.ratio)}×" if floored else "",
                    str(target) if target else "",
                    verdict,
                ]
            )
    return _grid(rows, right=[2, 4, 5, 6])


def by_size(result: Result) -> str | None:
    """The scenario's rows as a table, for those run at several sizes; None for others."""
    columns = _BY_SIZE.get(result.scenario)
    if not columns or not result.rows:
        return None
    rows = [[heading for _, heading in columns]]
    for row in result.rows:
        rows.append([number(row.get(key, math.nan)) for key, _ in columns])
    return _grid(rows, right=range(len(columns)))
