"""The store's hook operations, run alike by both engines (docs/hooks.md).

`SqlHooks` is part of `SqlStore` (sql_store.py), apart because it is one idea: what
HookService (core/hooks) keeps. Its statements are `HookStatements` (hook_statements.py),
its engine's `_hooks_sql`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from blitz.store.hook_records import HookRecord
from blitz.store.hook_statements import HookStatements
from blitz.store.rows import Row

__all__ = ["SqlHooks"]


def _hook(row: Row) -> HookRecord:
    hook_id, owner, server_wide, spec, secret, created, updated = row
    return HookRecord(
        id=hook_id,
        owner=owner,
        server_wide=bool(server_wide),
        spec=bytes(spec),
        secret=secret,
        create_time=float(created),
        update_time=float(updated),
    )


class SqlHooks:
    """The hook part of `SqlStore`; what each operation does, hook_base.py says."""

    # The engine's hook statements (webhooks' are `_hook_sql`), and how it runs them.
    _hooks_sql: ClassVar[HookStatements]
    _execute: Callable[[str, Sequence[object]], Awaitable[int]]
    _fetch: Callable[[str, Sequence[object]], Awaitable[list[Row]]]

    async def add_hook(self, rec: HookRecord) -> None:
        await self._execute(
            self._hooks_sql.add_hook,
            (
                rec.id,
                rec.owner,
                rec.server_wide,
                rec.spec,
                rec.secret,
                rec.create_time,
                rec.update_time,
            ),
        )

    async def get_hook(self, hook_id: str) -> HookRecord | None:
        found = await self._fetch(self._hooks_sql.get_hook, (hook_id,))
        return _hook(found[0]) if found else None

    async def list_hooks(self, owner: str | None = None) -> list[HookRecord]:
        if owner is None:
            rows = await self._fetch(self._hooks_sql.all_hooks, ())
        else:
            rows = await self._fetch(self._hooks_sql.hooks_of, (owner,))
        return [_hook(row) for row in rows]

    async def update_hook(self, rec: HookRecord) -> bool:
        changed = await self._execute(
            self._hooks_sql.update_hook, (rec.spec, rec.update_time, rec.id)
        )
        return changed == 1

    async def delete_hook(self, hook_id: str) -> bool:
        return await self._execute(self._hooks_sql.delete_hook, (hook_id,)) == 1
