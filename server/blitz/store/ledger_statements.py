"""The statements of the usage ledger: a row per model call, and a session's totals.

Rows are only ever added; a session's totals are summed from them when asked, so there
is no running total to drift. The two flags of the totals (every row priced, any row's
tokens unknown) are summed up in each engine's way (`Dialect.ledger_flags`).
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect, marks

__all__ = ["LEDGER_COLUMNS", "LedgerStatements"]

# A LedgerRow's columns, in the order of its fields.
LEDGER_COLUMNS = (
    "session_id, turn_id, model, input, cached, cache_write, output, cost_usd, priced,"
    " search_queries, search_cost_usd, time, tokens_unknown"
)


class LedgerStatements:
    """The usage ledger's statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.add_ledger = sql(f"INSERT INTO ledger ({LEDGER_COLUMNS}) VALUES ({marks(13)})")
        self.ledger = sql(f"SELECT {LEDGER_COLUMNS} FROM ledger WHERE session_id = ? ORDER BY id")
        # Parameters: session_id twice.
        self.usage_totals = sql(
            "SELECT COUNT(*), CAST(COALESCE(SUM(input), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(cached), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(cache_write), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(output), 0) AS BIGINT), COALESCE(SUM(cost_usd), 0.0),"
            " CAST(COALESCE(SUM(search_queries), 0) AS BIGINT),"
            " COALESCE(SUM(search_cost_usd), 0.0),"
            " (SELECT input FROM ledger WHERE session_id = ? ORDER BY id DESC LIMIT 1),"
            f" {dialect.ledger_flags} FROM ledger WHERE session_id = ?"
        )
