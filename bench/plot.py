"""The picture `python -m bench` draws: latency and memory against the number of sessions.

Left, from `sessions` at each size: RunTurn→accepted and →approval_request in the burst,
Decide→next event, and new turns' →accepted, p50 dashed and p99 solid. Middle, from
`parked` at each count: how much the server's RSS grew with that many turns parked,
streams open and none, beside the bare grpc.aio server with as many idle streams. Right,
when `long` ran: each turn's latency along the session. matplotlib comes from the
`[bench]` extra, which `make bench` installs; it is imported only here, to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.results import Result

__all__ = ["draw"]

_LATENCIES = [
    ("burst_accepted", "burst: RunTurn→accepted"),
    ("burst_parked", "burst: RunTurn→approval_request"),
    ("decide_next", "Decide→next event"),
    ("new_accepted", "new turn while parked: →accepted"),
]
_RSS = [("open", "Blitz, streams open"), ("none", "Blitz, no client"), ("bare", "bare grpc.aio")]


def draw(results: dict[str, Result], path: Path) -> bool:
    """Draw what `results` hold into `path` (PNG); False when there is nothing to draw."""
    sessions, parked, long = results.get("sessions"), results.get("parked"), results.get("long")
    panels = [r for r in (sessions, parked, long) if r is not None and (r.rows or r.series)]
    if not panels:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, result in zip(axes[0], panels, strict=True):
        if result is sessions:
            _latencies(ax, result)
        elif result is parked:
            _memory(ax, result)
        else:
            _long(ax, result)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _latencies(ax: Any, result: Result) -> None:
    from matplotlib import ticker

    sizes = [row["size"] for row in result.rows]
    for i, (key, label) in enumerate(_LATENCIES):
        p99 = [row[f"{key}_p99_ms"] for row in result.rows]
        p50 = [row[f"{key}_p50_ms"] for row in result.rows]
        ax.plot(sizes, p99, "o-", color=f"C{i}", label=label)
        ax.plot(sizes, p50, "o--", color=f"C{i}", alpha=0.5)
    ax.set(
        xlabel="sessions, all parked",
        ylabel="ms",
        xscale="log",
        yscale="log",
        title="Latency against sessions (p99 solid, p50 dashed)",
    )
    ax.set_xticks(sizes, [str(size) for size in sizes])
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.legend(fontsize="x-small")


def _memory(ax: Any, result: Result) -> None:
    counts = [row["count"] for row in result.rows]
    for key, label in _RSS:
        # Growth over the server before the turns (or streams): N times the cost of one.
        growth = [row[f"{key}_kb"] * row["count"] / 1024 for row in result.rows]
        per_turn = result.rows[-1][f"{key}_kb"]
        ax.plot(counts, growth, "o-", label=f"{label}: {per_turn:.1f} KB each at {counts[-1]}")
    ax.set(
        xlabel="parked turns (bare: idle open streams)",
        ylabel="server RSS growth, MB",
        title="Memory against parked turns",
    )
    ax.legend(fontsize="x-small")


def _long(ax: Any, result: Result) -> None:
    latencies = result.series["latency_ms"]
    ax.plot(range(1, len(latencies) + 1), latencies, ".", markersize=2, alpha=0.5)
    ax.set(
        xlabel="turn in the session",
        ylabel="RunTurn→finished, ms",
        title=f"One session, {len(latencies)} turns",
    )
