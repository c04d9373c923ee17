"""The statements of bearer tokens: issuing, finding by hash, listing, revoking.

Only a token's hash is kept, never the token: a caller's token is found by hashing what
it presents. A revoked token keeps its row (with its `revoke_time`), so a listing shows it.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect, marks

__all__ = ["TOKEN_COLUMNS", "TokenStatements"]

# A TokenRecord's columns, in the order of its fields.
TOKEN_COLUMNS = "id, name, hash, admin, create_time, revoke_time"


class TokenStatements:
    """The bearer tokens' statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.add_token = sql(f"INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES ({marks(6)})")
        self.find_token = sql(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?")
        self.list_tokens = sql(f"SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY create_time, id")
        self.revoke_tokens = sql(
            "UPDATE tokens SET revoke_time = ? WHERE (id = ? OR name = ?) AND revoke_time IS NULL"
        )
