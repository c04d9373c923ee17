"""The usage ledger seen as protobuf: totals and entries from stored rows."""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from blitz.store import LedgerRow
from blitz.v1.session_pb2 import LedgerEntry
from blitz.v1.turn_pb2 import Usage

__all__ = ["ledger_entry", "total_usage"]


def total_usage(rows: Sequence[LedgerRow]) -> Usage:
    """The sum of a session's ledger. `priced` holds only if every call's price is known."""
    usage = Usage(priced=True)
    for row in rows:
        usage.calls += 1
        usage.input += row.input
        usage.cached += row.cached
        usage.cache_write += row.cache_write
        usage.output += row.output
        usage.cost_usd += row.cost_usd
        usage.search_queries += row.search_queries
        usage.search_cost_usd += row.search_cost_usd
        usage.priced = usage.priced and row.priced
        usage.last_prompt = row.input + row.cached + row.cache_write
    return usage


def ledger_entry(row: LedgerRow) -> LedgerEntry:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(row.time * 1e9))
    return LedgerEntry(
        turn_id=row.turn_id,
        model=row.model,
        input=row.input,
        cached=row.cached,
        cache_write=row.cache_write,
        output=row.output,
        cost_usd=row.cost_usd,
        priced=row.priced,
        search_queries=row.search_queries,
        search_cost_usd=row.search_cost_usd,
        time=stamp,
    )
