"""The SQL of hooks both engines run alike (docs/hooks.md).

Written as `statements.py` writes the rest (SQLite's text, `?` for a parameter); apart
because it is one idea, the part of the store only HookService (core/hooks) reads and
writes.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect, marks

__all__ = ["HOOK_COLUMNS", "HookStatements"]

HOOK_COLUMNS = "id, owner, server_wide, spec, secret, create_time, update_time"


class HookStatements:
    """Every hook statement, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        hooks = f"SELECT {HOOK_COLUMNS} FROM hooks"
        self.add_hook = sql(f"INSERT INTO hooks ({HOOK_COLUMNS}) VALUES ({marks(7)})")
        self.get_hook = sql(f"{hooks} WHERE id = ?")
        self.all_hooks = sql(f"{hooks} ORDER BY create_time, id")
        # The server-wide ones first: they run before a principal's own.
        self.hooks_of = sql(
            f"{hooks} WHERE server_wide OR owner = ?"
            " ORDER BY CASE WHEN server_wide THEN 0 ELSE 1 END, create_time, id"
        )
        self.update_hook = sql("UPDATE hooks SET spec = ?, update_time = ? WHERE id = ?")
        self.delete_hook = sql("DELETE FROM hooks WHERE id = ?")
