"""The one storage interface: the few operations the core needs, and nothing else.

Engines implement it; the core sees nothing else, and `tests/store/test_contract.py` holds
every engine to it. Each method is one atomic step. Methods that decide a race
(`update_turn` with `expect`, `resolve_pending`) say by their return value who won, so
that the first answer wins even when several processes share the database. The store
numbers events (`append_events`): a session's seqs are gap-free and strictly increasing
whoever appends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from blitz.store.records import (
    EventRow,
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    TokenRecord,
    TurnRecord,
    TurnState,
    UsageTotals,
)
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["Store"]


class Store(Protocol):
    async def __aenter__(self) -> Store:
        """Open the store (connect, migrate the schema)."""
        ...

    async def __aexit__(self, *exc: object) -> None:
        """Close it."""
        ...

    # Sessions

    async def create_session(self, rec: SessionRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session with its `last_seq`, task list and plan; None when there is none."""
        ...

    async def list_sessions(self, query: SessionQuery) -> list[SessionRecord]: ...

    async def update_session(self, session_id: str, change: SessionChange) -> None: ...

    # Turns

    async def create_turn(self, rec: TurnRecord) -> None: ...

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None: ...

    async def update_turn(self, rec: TurnRecord, *, expect: TurnState | None = None) -> bool:
        """Write every mutable field of the turn (state, counters, steer, history).

        With `expect`, only if the stored state is `expect`; returns whether it wrote.
        """
        ...

    async def turns_in_state(self, state: TurnState) -> list[TurnRecord]: ...

    # Events

    async def append_events(self, events: Sequence[TurnEvent]) -> None:
        """Number and store `events` in one transaction, in order.

        Each event names its session (`session_id`) and is given that session's next seq,
        set on the event before it is stored; nothing is stored if anything fails.
        """
        ...

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        """Up to `limit` of the session's events with `seq > after_seq`, in seq order."""
        ...

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        """The turn's newest event; None when it has none."""
        ...

    def changes(self) -> AsyncIterator[dict[str, int]]:
        """Appends as every process sharing the database announces them, a batch at a time:
        {session_id: its last seq}; first an empty one, once listening. Notices may be
        missed (a reconnect); an engine that only one process uses (SQLite) announces
        nothing at all."""
        ...

    # Pending requests

    async def put_pending(self, recs: Sequence[PendingRecord]) -> None:
        """Store requests; one whose id the session used before replaces that one."""
        ...

    async def list_pending(
        self,
        session_id: str,
        *,
        turn_id: str | None = None,
        request_id: str | None = None,
        open_only: bool = True,
    ) -> list[PendingRecord]: ...

    async def resolve_pending(self, session_id: str, request_id: str, resolution: str) -> bool:
        """Record the resolution if still open; False when someone resolved it first."""
        ...

    # Usage ledger

    async def add_ledger(self, row: LedgerRow) -> None: ...

    async def ledger(self, session_id: str) -> list[LedgerRow]: ...

    async def usage_totals(self, session_id: str) -> UsageTotals:
        """The session's ledger summed, without reading every row into the process."""
        ...

    # Approval rules

    async def add_rule(self, rule: RuleRecord) -> None: ...

    async def rules_for(self, *, session_id: str, workspace: str, caller: str) -> list[RuleRecord]:
        """The SESSION rules of the session and the ALWAYS rules of caller + workspace."""
        ...

    async def delete_rule(self, rule_id: str) -> bool: ...

    # Images uploaded for turns

    async def add_image(self, image: ImageRecord) -> None: ...

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None: ...

    # Bearer tokens

    async def add_token(self, token: TokenRecord) -> None: ...

    async def find_token(self, hash: str) -> TokenRecord | None:
        """The token with this hash, revoked or not; None when there is none."""
        ...

    async def list_tokens(self) -> list[TokenRecord]:
        """Every token, revoked ones included, oldest first."""
        ...

    async def revoke_tokens(self, id_or_name: str, *, now: float) -> int:
        """Revoke the token with this id, or every token of this name; how many it revoked."""
        ...

    async def ping(self) -> None:
        """Return once the store answers a query; raise when it cannot."""
        ...

    # Agent state: the session's message history after its last completed turn

    async def get_history(self, session_id: str) -> bytes | None: ...

    async def set_history(self, session_id: str, history: bytes) -> None: ...
