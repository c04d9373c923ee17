"""Which hooks run in whose sessions (docs/hooks.md, "Who runs what").

In a principal's sessions: the operator's declared hooks that are for every principal or
for that one, in the file's order; then the server-wide hooks an admin made; then the
principal's own, each oldest first. Stored hooks are read at each ask (one indexed read),
so a hook made, changed or deleted on any replica counts from the next run of a turn.
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

    async def hooks_for(self, owner: str) -> list[HookSpec]:
        """The hooks that run in `owner`'s sessions, in the order they run."""
        declared = [h for h in self.declared if h.server_wide or h.owner == owner]
        return [*declared, *(spec_of(rec) for rec in await self._store.list_hooks(owner))]

    async def every(self) -> list[HookSpec]:
        """Every hook, declared ones first (an admin's list)."""
        return [*self.declared, *(spec_of(rec) for rec in await self._store.list_hooks())]
