"""The one storage interface: the few operations the core needs, and nothing else.

Engines implement it; the core sees nothing else, and `tests/store/test_contract.py` holds
every engine to it. Each method is one atomic step. Methods that decide a race
(`create_turn` and `update_session` with what they expect, `claim_turn`, `update_turn`,
`resolve_pending`, `add_steer`) say by their return value who won, so that the first wins
even when several processes share the database. The store numbers events
(`append_events`): a session's seqs are gap-free and strictly increasing whoever appends.

A running turn is held by one process (its `owner`) on a lease the holder renews
(`renew_leases`); each taking of a turn raises its `epoch`, and the holder's writes of the
turn (`update_turn`, its events) are fenced by the epoch it took it at. Times are Unix
seconds from the callers' clocks, which must agree to well within a lease.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from typing import Protocol

from blitz.store.hook_base import HookStore
from blitz.store.records import (
    Changes,
    Checkpoint,
    EventRow,
    FileOriginal,
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    TokenRecord,
    TurnControl,
    TurnPage,
    TurnRecord,
    TurnState,
    UsageTotals,
)
from blitz.store.schedule_base import ScheduleStore
from blitz.store.webhook_base import Expand, WebhookStore
from blitz.store.writes import TurnWrite
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["Expand", "LeaseRenewer", "Store"]  # Expand is webhook_base.py's, re-exported


class LeaseRenewer(Protocol):
    """One process's lease renewals off the event loop: a connection of its own, used by
    one thread of its own (each call blocks; `Store.lease_renewer`)."""

    def renew(self, lease_until: float) -> list[TurnControl]:
        """As `Store.renew_leases`, for the owner it was made for; raises when the store
        cannot be reached (the next call connects again)."""
        ...

    def close(self) -> None: ...


class Store(WebhookStore, ScheduleStore, HookStore, Protocol):
    @property
    def shared(self) -> bool:
        """Whether other processes may use the store at once (PostgreSQL), or it is this
        process's alone (SQLite): then nothing it holds can belong to a live process when
        it starts."""
        ...

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

    async def update_session(self, session_id: str, change: SessionChange) -> bool:
        """Apply `change` if the session is as it expects; whether it did. A closed
        session stays closed, whatever state the change names."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Delete the session and everything stored of it (its turns, events, requests,
        ledger, SESSION rules, images, histories, file originals, checkpoints and their
        blobs), in one transaction;
        whether there was one. ALWAYS rules stay: they belong to a caller and workspace."""
        ...

    # Turns

    async def list_turns(self, page: TurnPage) -> list[TurnRecord]:
        """Up to `page.limit` of the session's turns after `page.after`, oldest first
        (by create_time, then turn_id)."""
        ...

    async def create_turn(
        self, rec: TurnRecord, *, lease_until: float, session: SessionChange | None = None
    ) -> bool:
        """Store a new turn held by `rec.owner` until `lease_until`, and apply `session` to
        its session in the same transaction; nothing, and False, if that change does not
        apply (the session is not as it expects)."""
        ...

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None: ...

    async def update_turn(self, rec: TurnRecord) -> bool:
        """Write the turn's state, counters and history, if it still runs at `rec.epoch`:
        a write of its holder (whether it wrote). A turn no longer running has no owner."""
        ...

    async def claim_turn(
        self,
        session_id: str,
        turn_id: str,
        *,
        state: TurnState,
        owner: str,
        lease_until: float,
        expired_before: float | None = None,
    ) -> TurnRecord | None:
        """Take the turn if it is in `state` (and, with `expired_before`, its lease ended
        before then): it runs, held by `owner`, its epoch raised. The turn as taken, or
        None when it was not in that state (someone else took or ended it)."""
        ...

    async def start_queued(
        self, rec: TurnRecord, *, owner: str, lease_until: float, session: SessionChange
    ) -> TurnRecord | None:
        """Start a queued turn: it runs, held by `owner` until `lease_until` from
        `rec.deadline` with `rec.usage_before`, and `session` is applied to its session, in
        one transaction; None, and nothing, if the turn is no longer queued or the session
        is not as `session` expects."""
        ...

    async def queued_turns(self, session_id: str) -> list[TurnRecord]:
        """The session's queued turns, in the order they start."""
        ...

    async def renew_leases(self, owner: str, *, lease_until: float) -> list[TurnControl]:
        """Extend the leases of the running turns `owner` holds; those turns, with what
        others asked of them. A turn missing from the answer is no longer the owner's."""
        ...

    def lease_renewer(self, owner: str, *, timeout: float) -> LeaseRenewer:
        """A renewer of `owner`'s leases that runs on a thread of its own, with a
        connection of its own, so that a renewal never waits behind the event loop's work
        (a busy machine would otherwise let the leases of a live process run out). Each
        call gives up after `timeout` seconds."""
        ...

    async def turns_in_state(
        self,
        state: TurnState,
        *,
        lease_ended_before: float | None = None,
        session_id: str | None = None,
    ) -> list[TurnRecord]:
        """Every turn in `state` (of one session); with `lease_ended_before`, only those
        whose lease ended before then."""
        ...

    async def count_turns(self, state: TurnState) -> int: ...

    async def parked_turns_due(self, *, now: float, settled_before: float) -> list[TurnRecord]:
        """Parked turns something must happen to: past their deadline, with an open
        request past its expiry, in a closed session or one that let them go, or with no
        open request left and the last resolved before `settled_before` (nobody resumed
        them)."""
        ...

    async def request_cancel(self, session_id: str, turn_id: str) -> bool:
        """Ask the turn's holder to cancel it (announced to every process); False when
        the turn has finished."""
        ...

    async def add_steer(self, session_id: str, turn_id: str, text: str) -> bool:
        """Queue steer text for the turn (announced to every process); False once the turn
        has taken its leftovers (`take_steer(close=True)`) or finished."""
        ...

    async def take_steer(self, session_id: str, turn_id: str, *, close: bool = False) -> list[str]:
        """The turn's queued steer text, removed; with `close`, none is accepted after."""
        ...

    # Events

    async def append_events(
        self,
        events: Sequence[TurnEvent],
        *,
        fences: Mapping[tuple[str, str], int] | None = None,
        writes: Sequence[TurnWrite] = (),
    ) -> set[tuple[str, str]]:
        """Number and store `events` in one transaction, in order.

        Each event names its session (`session_id`) and is given that session's next seq,
        set on the event before it is stored; nothing is stored if anything fails. The
        events of a turn in `fences` ({(session_id, turn_id): epoch}) are stored only if
        the turn still runs at that epoch; the others are left out, unnumbered, and their
        turns returned. An `accepted` event, its turn's first, sets the turn's `first_seq`
        (when not yet set) in the same transaction. Each stored event of a kind in
        `OUTBOX_KINDS` gets a row in the webhook outbox, in the same transaction (see
        `expand_outbox`).

        Each of `writes` is written in the same transaction too, unless its turn was left
        out: a `TurnStart` first, before the fences are looked at (a turn whose session
        it cannot take is left out and returned, as a fenced one is); the others after
        the events: a turn's end (`TurnEnd`: recorded finished, its history kept, its
        session let go), a workflow run's state (`FlowWrite`), a parking turn's requests
        (`PendingWrite`, each with its announcement as stored), the turn's state
        (`TurnUpdate`), its session's (`SessionUpdate`), a ledger row (`LedgerRow`).
        """
        ...

    async def get_workflow_run(self, session_id: str, turn_id: str) -> bytes | None:
        """The state a workflow run's turn last wrote with a `flow_step` (None: none yet)."""
        ...

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        """Up to `limit` of the session's events with `seq > after_seq`, in seq order."""
        ...

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        """The turn's newest event; None when it has none."""
        ...

    async def last_seqs(self, session_ids: Sequence[str]) -> dict[str, int]:
        """The last seq of each of these sessions that has events."""
        ...

    def changes(self) -> AsyncIterator[Changes]:
        """What every process sharing the database announces, a batch at a time: appends,
        and turns asked to cancel or steer; first an empty batch, once listening. Notices
        may be missed (a reconnect); a store that is not `shared` announces nothing."""
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

    async def rules_for(
        self, *, session_id: str, caller: str, workspace: str, now: float | None = None
    ) -> list[RuleRecord]:
        """The SESSION rules of the session and the ALWAYS rules of the caller in the
        workspace, but those expired by `now` (the time now by default); oldest first."""
        ...

    async def delete_rule(self, rule_id: str) -> bool: ...

    # Images uploaded for turns

    async def add_image(self, image: ImageRecord) -> None: ...

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None: ...

    # Workspace names: each principal's own

    async def workspace_folder(self, owner: str, name: str, *, new: str) -> str:
        """The folder `owner`'s workspace `name` stands for: the one it was first given,
        or, when `owner` names it for the first time, `new` (claimed in one step, so of
        two callers naming it at once, both get the same folder)."""
        ...

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

    # The server's own keys

    async def server_key(self, name: str, *, new: bytes) -> bytes:
        """The server's key `name`: the one stored, or, when none is yet, `new` (claimed in
        one step, so every process sharing the store gets the same key). Deleting its row
        is how an operator rotates it (the next start makes another)."""
        ...

    async def ping(self) -> None:
        """Return once the store answers a query; raise when it cannot."""
        ...

    # Agent state: the session's message history after its last completed turn

    async def get_history(self, session_id: str) -> bytes | None: ...

    async def set_history(self, session_id: str, history: bytes) -> None: ...

    async def keep_turn_history(self, session_id: str, turn_id: str, *, newest: int) -> None:
        """Keep a copy of the session's history as it is now as the turn's (b"" when the
        session has none), replacing any kept before; the session keeps those of its
        `newest` latest turns (by start) and no others."""
        ...

    async def get_turn_history(self, session_id: str, turn_id: str) -> bytes | None:
        """The history kept for the turn; None when none was."""
        ...

    async def rewind(
        self, session_id: str, *, history: bytes, dropped: Sequence[str], change: SessionChange
    ) -> bool:
        """Apply `change` to the session if it is as the change expects, and then set its
        history to `history` and forget the histories kept for the `dropped` turns, all
        in one transaction; whether it did (nothing is written when the change does not
        apply)."""
        ...

    # Workspace files as they were before the session changed them

    async def keep_original(self, original: FileOriginal) -> bool:
        """Store the file's original unless the session has one for its path already;
        whether it stored it (the first change of a file keeps what it was)."""
        ...

    async def originals(self, session_id: str) -> list[FileOriginal]:
        """The session's file originals, by path."""
        ...

    # Workspace checkpoints: what a turn's files were at its start and its end

    async def put_checkpoint(self, checkpoint: Checkpoint, blobs: Mapping[str, bytes]) -> None:
        """Store the checkpoint, replacing one of the same turn and `at`, and `blobs`
        (content by hash) the session has not stored yet, in one transaction."""
        ...

    async def checkpointed_turns(self, session_id: str) -> list[str]:
        """The session's turns that have a checkpoint (a start, or an end alone: a turn
        that changed nothing), by their oldest checkpoint, oldest first."""
        ...

    async def get_checkpoints(self, session_id: str, turn_id: str) -> list[Checkpoint]:
        """The turn's checkpoints (its start, its end: either may be missing)."""
        ...

    async def checkpoint_blobs(self, session_id: str, hashes: Collection[str]) -> dict[str, bytes]:
        """The contents of the session's blobs of these hashes, by hash (those it has)."""
        ...

    async def checkpoint_blob_hashes(self, session_id: str) -> set[str]:
        """The hash of every blob the session has."""
        ...

    async def drop_checkpoints(
        self, session_id: str, *, turn_ids: Sequence[str], hashes: Collection[str]
    ) -> None:
        """Delete the checkpoints of these turns and the blobs of these hashes, in one
        transaction."""
        ...
