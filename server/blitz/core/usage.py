"""The usage ledger seen as protobuf: totals and entries from stored rows."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from blitz.store import LedgerRow, Store, UsageTotals
from blitz.v1.session_pb2 import LedgerEntry
from blitz.v1.turn_pb2 import Usage

__all__ = ["ledger_entry", "session_usage", "usage_proto"]


def usage_proto(totals: UsageTotals) -> Usage:
    """A session's summed ledger as the protocol's `Usage`."""
    return Usage(
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
    )


async def session_usage(store: Store, session_id: str) -> Usage:
    """The session's cumulative usage, summed by the store."""
    return usage_proto(await store.usage_totals(session_id))


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
