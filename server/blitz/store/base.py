"""The one storage interface. Engines implement it; the core sees nothing else.

Every method is a single atomic step. Methods that decide a race (`resolve_pending`,
`set_turn_state` with `expect`) say who won by their return value, so that the first answer
wins even when two replicas share the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from blitz.store.records import (
    EventRow,
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionRecord,
    TurnRecord,
    UsageTotals,
)

__all__ = ["Store"]


class Store(Protocol):
    # Sessions
    async def create_session(self, rec: SessionRecord) -> None: ...
    async def get_session(self, session_id: str) -> SessionRecord | None: ...
    async def list_sessions(
        self,
        *,
        owner: str,
        state: int,
        labels: dict[str, str],
        limit: int,
        before: tuple[float, str] | None,
    ) -> list[SessionRecord]:
        """Newest first; `state` 0 means any; `before` is (create_time, id) to page from."""
        ...

    async def set_session_state(
        self, session_id: str, *, state: int, turn_id: str, now: float
    ) -> None: ...

    async def set_session_model(self, session_id: str, model: str) -> None: ...

    # Turns
    async def create_turn(self, rec: TurnRecord) -> None: ...
    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None: ...
    async def update_turn(self, rec: TurnRecord) -> None:
        """Write every mutable field of the turn (state, counters, steer, history)."""
        ...

    async def set_turn_state(
        self, session_id: str, turn_id: str, *, state: str, expect: str
    ) -> bool:
        """Move a turn from `expect` to `state`; False when it was not in `expect`."""
        ...

    async def turns_in_state(self, state: str) -> list[TurnRecord]: ...

    # Events
    async def append_events(self, rows: Sequence[EventRow]) -> None: ...
    async def read_events(
        self, session_id: str, *, after_seq: int, limit: int
    ) -> list[EventRow]: ...
    async def last_seq(self, session_id: str) -> int: ...
    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        """The turn's newest event; None when it has none."""
        ...

    # Pending requests
    async def add_pending(self, recs: Sequence[PendingRecord]) -> None:
        """Store open requests; one whose id the session used before replaces that one."""
        ...

    async def get_pending(self, session_id: str, request_id: str) -> PendingRecord | None: ...
    async def list_pending(
        self, session_id: str, *, turn_id: str | None = None, open_only: bool = True
    ) -> list[PendingRecord]: ...
    async def set_pending_event(self, session_id: str, request_id: str, event: bytes) -> None:
        """Replace the stored request event (with its `seq` once it is in the log)."""
        ...

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

    # Session notes: the latest task list (serialized Tasks) and the proposed plan
    async def set_tasks(self, session_id: str, tasks: bytes) -> None: ...
    async def get_tasks(self, session_id: str) -> bytes | None: ...
    async def set_plan(self, session_id: str, plan: bytes | None) -> None: ...
    async def get_plan(self, session_id: str) -> bytes | None: ...

    # Images uploaded for turns
    async def add_image(self, image: ImageRecord) -> None: ...
    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None: ...

    # Agent state: the session's message history after its last completed turn
    async def get_history(self, session_id: str) -> bytes | None: ...
    async def set_history(self, session_id: str, history: bytes) -> None: ...

    async def close(self) -> None: ...
