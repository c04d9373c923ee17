"""A session's usage, from its ledger: the sums as the protocol's `Usage`, per session and
per turn.

Below every room of the core: the turn driver reads it for each turn's `before` and
`after`, the slash commands for `/usage`, the calls for GetUsage and ListTurns. It reads
the store's sums and decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from blitz.store import LedgerRow, Store, UsageTotals
from blitz.v1 import turn_pb2 as t

__all__ = ["session_usage", "turn_usage", "usage_view"]


def usage_view(totals: UsageTotals) -> t.Usage:
    """A session's summed ledger as the protocol's `Usage`."""
    return t.Usage(
        calls=totals.calls,
        input=totals.input,
        cached=totals.cached,
        cache_write=totals.cache_write,
        output=totals.output,
        cost_usd=totals.cost_usd,
        priced=totals.priced,
        search_queries=totals.search_queries,
        search_cost_usd=totals.search_cost_usd,
        last_prompt=totals.last_prompt,
        tokens_unknown=totals.tokens_unknown,
    )


async def session_usage(store: Store, session_id: str) -> t.Usage:
    """The session's cumulative usage, summed by the store."""
    return usage_view(await store.usage_totals(session_id))


def turn_usage(rows: Iterable[LedgerRow]) -> dict[str, t.Usage]:
    """The ledger summed per turn, as `Usage` (last_prompt: the turn's last call's)."""
    totals: dict[str, UsageTotals] = {}
    for row in rows:
        sums = totals.setdefault(row.turn_id, UsageTotals())
        sums.calls += 1
        sums.input += row.input
        sums.cached += row.cached
        sums.cache_write += row.cache_write
        sums.output += row.output
        sums.cost_usd += row.cost_usd
        sums.priced = sums.priced and row.priced
        sums.search_queries += row.search_queries
        sums.search_cost_usd += row.search_cost_usd
        sums.last_prompt = row.input  # input counts the cached and cache-write tokens
    return {turn_id: usage_view(sums) for turn_id, sums in totals.items()}
