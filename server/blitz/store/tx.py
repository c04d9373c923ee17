"""One transaction of an engine, as the operations both engines share run it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from blitz.store.rows import Row

__all__ = ["Tx", "Undone"]


class Tx(Protocol):
    """One transaction of an engine, as the operations written here use it: each
    statement runs inside it, and it commits when the body returns."""

    async def execute(self, sql: str, params: Sequence[object]) -> int: ...
    async def fetch(self, sql: str, params: Sequence[object]) -> list[Row]: ...
    async def execute_many(self, sql: str, params: Sequence[Sequence[object]]) -> None: ...


class Undone(Exception):
    """Raised in an engine's transaction to roll it back: a step found things not as the
    operation expects, and the operation does nothing."""
