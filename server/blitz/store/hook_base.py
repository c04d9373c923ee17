"""The hooks' part of the storage interface (docs/hooks.md).

`Store` (base.py) is made of it; apart because it is one idea, what HookService
(core/hooks) keeps. `SqlHooks` (sql_hooks.py) implements it for both engines.
"""

from __future__ import annotations

from typing import Protocol

from blitz.store.hook_records import HookRecord

__all__ = ["HookStore"]


class HookStore(Protocol):
    """The hook operations of a store."""

    async def add_hook(self, rec: HookRecord) -> None: ...

    async def get_hook(self, hook_id: str) -> HookRecord | None: ...

    async def list_hooks(self, owner: str | None = None) -> list[HookRecord]:
        """The hooks that run in `owner`'s sessions: the server-wide ones, then `owner`'s
        own, each oldest first (None: every hook, oldest first)."""
        ...

    async def update_hook(self, rec: HookRecord) -> bool:
        """Write the hook's spec and update time; whether there was one."""
        ...

    async def delete_hook(self, hook_id: str) -> bool:
        """Whether there was one to delete."""
        ...
