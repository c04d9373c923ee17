"""Which hooks run in whose sessions (docs/hooks.md, "Who runs what").

In a principal's sessions: the operator's declared hooks that are for every principal or
for that one, in the file's order; then the server-wide hooks an admin made; then the
principal's own, each oldest first. Where processes share the store, stored hooks are read
at each ask, so a hook made, changed or deleted on any replica counts from the next run of
a turn. Where the store is this process's alone (SQLite), every change goes through this
process's HookService, which says so (`changed`): the hooks are read once and kept until
then, so a turn's run reads nothing more when no hook changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from blitz.core.hooks.specs import HookSpec, spec_of
from blitz.store import Store

__all__ = ["HookDirectory"]


class HookDirectory:
    """The declared hooks, and the stored ones as the store keeps them."""

    def __init__(self, *, store: Store, declared: Sequence[HookSpec] = ()) -> None:
        self._store = store
        self.declared = tuple(declared)
        # Stored hooks by owner, kept where no other process changes them.
        self._kept: dict[str, list[HookSpec]] | None = None if store.shared else {}

    def changed(self) -> None:
        """A hook was made, changed or deleted (by this process's HookService)."""
        if self._kept is not None:
            self._kept.clear()

    async def hooks_for(self, owner: str) -> list[HookSpec]:
        """The hooks that run in `owner`'s sessions, in the order they run."""
        declared = [h for h in self.declared if h.server_wide or h.owner == owner]
        return [*declared, *await self._stored(owner)]

    async def _stored(self, owner: str) -> list[HookSpec]:
        if self._kept is not None and owner in self._kept:
            return self._kept[owner]
        stored = [spec_of(rec) for rec in await self._store.list_hooks(owner)]
        if self._kept is not None:
            self._kept[owner] = stored
        return stored

    async def every(self) -> list[HookSpec]:
        """Every hook, declared ones first (an admin's list)."""
        return [*self.declared, *(spec_of(rec) for rec in await self._store.list_hooks())]
