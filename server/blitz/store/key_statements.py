"""The statements of the server's own keys: one made by whoever needs it first, then read.

A key is claimed with `ON CONFLICT DO NOTHING` and read back in the same operation, so of
two processes starting at once on one database, both get the key the first one wrote.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect

__all__ = ["KeyStatements"]


class KeyStatements:
    """The server keys' statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.claim_server_key = sql(
            "INSERT INTO server_keys (name, key, create_time) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO NOTHING"
        )
        self.server_key = sql("SELECT key FROM server_keys WHERE name = ?")
