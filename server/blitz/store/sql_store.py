"""The store's operations that are one statement, run alike by both engines.

`SqlStore` is what the SQLite and PostgreSQL engines share: each operation here runs its
engine's `Statements` through the engine's `_execute` or `_fetch` (or, for several
rows, `_execute_many`) and turns the rows into records (`rows.py`). An engine subclasses
it and adds the rest: opening and closing, the operations that are a transaction of
several statements, and what it does its own way (numbering events, announcing changes).
Operations of several statements run in one transaction of the engine's (`_transaction`,
through a `Tx`), so they too are written once. The webhooks' operations are
`SqlWebhooks`' (sql_webhooks.py). No SQL text here and no connection: those are
`statements.py` and each engine's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import ClassVar, Self, TypeVar

from blitz.store import rows
from blitz.store.records import (
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
from blitz.store.rows import Row
from blitz.store.sql_hooks import SqlHooks
from blitz.store.sql_schedules import SqlSchedules
from blitz.store.sql_webhooks import SqlWebhooks
from blitz.store.statements import Statements
from blitz.store.tx import Tx, Undone
from blitz.store.writes import (
    CheckpointWrite,
    FlowWrite,
    PendingWrite,
    SessionUpdate,
    TurnEnd,
    TurnStart,
    TurnUpdate,
    TurnWrite,
)

__all__ = ["SqlStore", "Tx", "Undone"]

_T = TypeVar("_T")


class SqlStore(SqlWebhooks, SqlSchedules, SqlHooks):
    """Half of an engine (see the module doc); what each operation does, store/base.py says."""

    # The engine's statements, and how it runs one: the count of rows it changed, the rows
    # it returned, or one run for each of several rows in one transaction.
    _sql: ClassVar[Statements]
    _execute: Callable[[str, Sequence[object]], Awaitable[int]]
    _fetch: Callable[[str, Sequence[object]], Awaitable[list[Row]]]
    _execute_many: Callable[[str, Sequence[Sequence[object]]], Awaitable[None]]

    async def _transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        """Run `body` in one transaction of the engine; its result once committed. (SQLite
        runs it to its end without letting the loop run anything else: it must not wait
        for anything but the transaction's statements.)"""
        raise NotImplementedError

    async def open(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _starting(self, start: TurnStart) -> list[tuple[str, Sequence[object]]]:
        """The statements that start a turn (`TurnStart`), for an engine to run first in
        the transaction that appends its `accepted`: the session's claim, when there is
        one (the turn is not written unless it changes one row), then the turn's row."""
        done: list[tuple[str, Sequence[object]]] = []
        if start.claim is not None:
            done.append(self._sql.update_session(start.session_id, start.claim))
        done.append((self._sql.create_turn, rows.turn_params(start.record, start.lease_until)))
        return done

    def _riding(self, write: TurnWrite) -> list[tuple[str, Sequence[object]]]:
        """The statements of one of `append_events`' writes but a `TurnStart`, for an
        engine to run after the events, which are numbered by then."""
        sid, tid = write.session_id, write.turn_id
        if isinstance(write, TurnEnd):
            done: list[tuple[str, Sequence[object]]] = []
            if write.history is not None:
                done.append((self._sql.set_history, (sid, write.history)))
            if write.keep_history:
                done.append((self._sql.keep_turn_history, (sid, tid, sid, b"")))
                done.append((self._sql.older_turn_histories, (sid, sid, write.keep_history)))
            ended = TurnUpdate(
                sid,
                tid,
                write.epoch,
                TurnState.FINISHED,
                write.first_seq,
                write.model_calls,
                write.cost_usd,
                None,
            )
            done.append(self._updating(ended))
            if write.release is not None:
                done.append(self._sql.update_session(sid, write.release))
            return done
        if isinstance(write, FlowWrite):
            return [(self._sql.put_workflow_run, (sid, tid, write.state, write.update_time))]
        if isinstance(write, PendingWrite):
            record = write.record
            if write.announced is not None:
                record = replace(record, event=write.announced.SerializeToString())
            return [(self._sql.put_pending, rows.pending_params(record))]
        if isinstance(write, TurnUpdate):
            return [self._updating(write)]
        if isinstance(write, SessionUpdate):
            return [self._sql.update_session(sid, write.change)]
        if isinstance(write, LedgerRow):
            return [(self._sql.add_ledger, rows.ledger_params(write))]
        if isinstance(write, CheckpointWrite):
            blobs = [(self._sql.put_checkpoint_blob, (sid, h, b)) for h, b in write.blobs.items()]
            return [*blobs, (self._sql.put_checkpoint, rows.checkpoint_params(write.checkpoint))]
        raise TypeError(f"a TurnStart is not written after the events: {write!r}")

    def _updating(self, update: TurnUpdate) -> tuple[str, Sequence[object]]:
        """`Statements.update_turn` with its parameters (a turn that stops running has no
        owner: the state is given twice)."""
        state = update.state.value
        counters = (update.first_seq, update.model_calls, update.cost_usd, update.history)
        where = (update.session_id, update.turn_id, update.epoch)
        return self._sql.update_turn, (state, *counters, state, *where)

    async def get_workflow_run(self, session_id: str, turn_id: str) -> bytes | None:
        found = await self._fetch(self._sql.get_workflow_run, (session_id, turn_id))
        return bytes(found[0][0]) if found else None

    async def _ask(self, sql: str, args: Sequence[object]) -> bool:
        """Ask something of a turn (one UPDATE, its last parameters the turn's session and
        id); whether it applied. An engine shared by processes announces it too."""
        return await self._execute(sql, args) == 1

    # Sessions

    async def create_session(self, rec: SessionRecord) -> None:
        await self._execute(self._sql.create_session, rows.session_params(rec))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        found = await self._fetch(self._sql.get_session, (session_id,))
        return rows.session(found[0]) if found else None

    async def list_sessions(self, query: SessionQuery) -> list[SessionRecord]:
        sql, args = self._sql.list_sessions(query)
        return [rows.session(row) for row in await self._fetch(sql, args)]

    async def update_session(self, session_id: str, change: SessionChange) -> bool:
        sql, args = self._sql.update_session(session_id, change)
        return await self._execute(sql, args) == 1

    # Turns

    async def list_turns(self, page: TurnPage) -> list[TurnRecord]:
        sql, args = self._sql.list_turns(page)
        return [rows.turn(row) for row in await self._fetch(sql, args)]

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        found = await self._fetch(self._sql.get_turn, (session_id, turn_id))
        return rows.turn(found[0]) if found else None

    async def update_turn(self, rec: TurnRecord) -> bool:
        return await self._execute(*self._updating(TurnUpdate.of(rec))) == 1

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
        sql, args = self._sql.claim_turn(
            session_id,
            turn_id,
            state=state,
            owner=owner,
            lease_until=lease_until,
            expired_before=expired_before,
        )
        found = await self._fetch(sql, args)
        return rows.turn(found[0]) if found else None

    async def create_turn(
        self, rec: TurnRecord, *, lease_until: float, session: SessionChange | None = None
    ) -> bool:
        async def body(tx: Tx) -> bool:
            *claim, (sql, args) = self._starting(TurnStart(rec, lease_until, session))
            if claim and await tx.execute(*claim[0]) != 1:
                return False
            await tx.execute(sql, args)
            return True

        return await self._transaction(body)

    async def start_queued(
        self, rec: TurnRecord, *, owner: str, lease_until: float, session: SessionChange
    ) -> TurnRecord | None:
        claim = (owner, lease_until, rec.deadline, rec.usage_before, rec.session_id, rec.turn_id)

        async def body(tx: Tx) -> TurnRecord | None:
            sql, args = self._sql.update_session(rec.session_id, session)
            if await tx.execute(sql, args) != 1:
                return None
            started = await tx.fetch(self._sql.start_queued, claim)
            if not started:
                raise Undone  # the turn is not queued now: the session's change undone too
            return rows.turn(started[0])

        try:
            return await self._transaction(body)
        except Undone:
            return None

    async def queued_turns(self, session_id: str) -> list[TurnRecord]:
        return [rows.turn(row) for row in await self._fetch(self._sql.queued_turns, (session_id,))]

    async def renew_leases(self, owner: str, *, lease_until: float) -> list[TurnControl]:
        held = await self._fetch(self._sql.renew_leases, (lease_until, owner))
        return [rows.turn_control(row) for row in held]

    async def turns_in_state(
        self,
        state: TurnState,
        *,
        lease_ended_before: float | None = None,
        session_id: str | None = None,
    ) -> list[TurnRecord]:
        sql, args = self._sql.turns_in_state(state, lease_ended_before, session_id)
        return [rows.turn(row) for row in await self._fetch(sql, args)]

    async def count_turns(self, state: TurnState) -> int:
        (row,) = await self._fetch(self._sql.count_turns, (state.value,))
        return int(row[0])

    async def parked_turns_due(self, *, now: float, settled_before: float) -> list[TurnRecord]:
        sql, args = self._sql.parked_turns_due(now, settled_before)
        return [rows.turn(row) for row in await self._fetch(sql, args)]

    async def request_cancel(self, session_id: str, turn_id: str) -> bool:
        return await self._ask(self._sql.request_cancel, (session_id, turn_id))

    async def add_steer(self, session_id: str, turn_id: str, text: str) -> bool:
        return await self._ask(self._sql.add_steer, (text, session_id, turn_id))

    # Events

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        found = await self._fetch(self._sql.read_events, (session_id, after_seq, limit))
        return [EventRow(session_id, row[0], row[1], row[2]) for row in found]

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        found = await self._fetch(self._sql.last_event_of_turn, (session_id, turn_id))
        return EventRow(session_id, found[0][0], turn_id, found[0][1]) if found else None

    # Pending requests

    async def put_pending(self, recs: Sequence[PendingRecord]) -> None:
        await self._execute_many(self._sql.put_pending, [rows.pending_params(r) for r in recs])

    async def list_pending(
        self,
        session_id: str,
        *,
        turn_id: str | None = None,
        request_id: str | None = None,
        open_only: bool = True,
    ) -> list[PendingRecord]:
        sql, args = self._sql.list_pending(session_id, turn_id, request_id, open_only)
        return [PendingRecord(*row) for row in await self._fetch(sql, args)]

    async def resolve_pending(self, session_id: str, request_id: str, resolution: str) -> bool:
        changed = await self._execute(
            self._sql.resolve_pending, (resolution, time.time(), session_id, request_id)
        )
        return changed == 1

    # Usage ledger

    async def add_ledger(self, row: LedgerRow) -> None:
        await self._execute(self._sql.add_ledger, rows.ledger_params(row))

    async def ledger(self, session_id: str) -> list[LedgerRow]:
        return [rows.ledger(row) for row in await self._fetch(self._sql.ledger, (session_id,))]

    async def usage_totals(self, session_id: str) -> UsageTotals:
        (row,) = await self._fetch(self._sql.usage_totals, (session_id, session_id))
        return rows.usage_totals(row)

    # Approval rules

    async def add_rule(self, rule: RuleRecord) -> None:
        await self._execute(self._sql.add_rule, rows.rule_params(rule))

    async def rules_for(
        self, *, session_id: str, caller: str, workspace: str, now: float | None = None
    ) -> list[RuleRecord]:
        now = time.time() if now is None else now
        found = await self._fetch(self._sql.rules_for, (session_id, caller, workspace, now))
        return [RuleRecord(*row) for row in found]

    async def delete_rule(self, rule_id: str) -> bool:
        return await self._execute(self._sql.delete_rule, (rule_id,)) == 1

    # Images

    async def add_image(self, image: ImageRecord) -> None:
        await self._execute(self._sql.add_image, rows.image_params(image))

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None:
        found = await self._fetch(self._sql.get_image, (session_id, image_id))
        return ImageRecord(*found[0]) if found else None

    # Workspace names

    async def workspace_folder(self, owner: str, name: str, *, new: str) -> str:
        await self._execute(self._sql.claim_workspace, (owner, name, new))
        found = await self._fetch(self._sql.workspace_folder, (owner, name))
        return str(found[0][0])

    # Bearer tokens

    async def add_token(self, token: TokenRecord) -> None:
        await self._execute(self._sql.add_token, rows.token_params(token))

    async def find_token(self, hash: str) -> TokenRecord | None:
        found = await self._fetch(self._sql.find_token, (hash,))
        return rows.token(found[0]) if found else None

    async def list_tokens(self) -> list[TokenRecord]:
        return [rows.token(row) for row in await self._fetch(self._sql.list_tokens, ())]

    async def revoke_tokens(self, id_or_name: str, *, now: float) -> int:
        return await self._execute(self._sql.revoke_tokens, (now, id_or_name, id_or_name))

    # The server's own keys

    async def server_key(self, name: str, *, new: bytes) -> bytes:
        await self._execute(self._sql.claim_server_key, (name, new, time.time()))
        found = await self._fetch(self._sql.server_key, (name,))
        return bytes(found[0][0])

    async def ping(self) -> None:
        await self._fetch(self._sql.ping, ())

    # Agent state

    async def get_history(self, session_id: str) -> bytes | None:
        found = await self._fetch(self._sql.get_history, (session_id,))
        return found[0][0] if found else None

    async def set_history(self, session_id: str, history: bytes) -> None:
        await self._execute(self._sql.set_history, (session_id, history))

    async def get_turn_history(self, session_id: str, turn_id: str) -> bytes | None:
        found = await self._fetch(self._sql.get_turn_history, (session_id, turn_id))
        return found[0][0] if found else None

    # Workspace files as they were

    async def keep_original(self, original: FileOriginal) -> bool:
        stored = await self._execute(
            self._sql.keep_original, (original.session_id, original.path, original.content)
        )
        return stored == 1

    async def originals(self, session_id: str) -> list[FileOriginal]:
        found = await self._fetch(self._sql.originals, (session_id,))
        return [FileOriginal(session_id, path, content) for path, content in found]

    async def rewind(
        self, session_id: str, *, history: bytes, dropped: Sequence[str], change: SessionChange
    ) -> bool:
        async def body(tx: Tx) -> bool:
            sql, args = self._sql.update_session(session_id, change)
            if await tx.execute(sql, args) != 1:
                return False
            await tx.execute(self._sql.set_history, (session_id, history))
            if dropped:
                await tx.execute_many(
                    self._sql.drop_turn_history, [(session_id, tid) for tid in dropped]
                )
            return True

        return await self._transaction(body)

    # Workspace checkpoints

    async def put_checkpoint(self, checkpoint: Checkpoint, blobs: Mapping[str, bytes]) -> None:
        async def body(tx: Tx) -> None:
            for sql, args in self._riding(CheckpointWrite(checkpoint, blobs)):
                await tx.execute(sql, args)

        await self._transaction(body)

    async def drop_checkpoints(
        self, session_id: str, *, turn_ids: Sequence[str], hashes: Collection[str]
    ) -> None:
        async def body(tx: Tx) -> None:
            if turn_ids:
                await tx.execute_many(
                    self._sql.drop_checkpoint, [(session_id, tid) for tid in turn_ids]
                )
            if hashes:
                await tx.execute_many(
                    self._sql.drop_checkpoint_blob, [(session_id, h) for h in hashes]
                )

        await self._transaction(body)

    async def checkpointed_turns(self, session_id: str) -> list[str]:
        found = await self._fetch(self._sql.checkpointed_turns, (session_id,))
        return [str(row[0]) for row in found]

    async def get_checkpoints(self, session_id: str, turn_id: str) -> list[Checkpoint]:
        found = await self._fetch(self._sql.get_checkpoints, (session_id, turn_id))
        return [Checkpoint(session_id, turn_id, at, manifest, when) for at, manifest, when in found]

    async def checkpoint_blobs(self, session_id: str, hashes: Collection[str]) -> dict[str, bytes]:
        if not hashes:
            return {}
        wanted = json.dumps(sorted(hashes))
        found = await self._fetch(self._sql.checkpoint_blobs, (session_id, wanted))
        return {str(row[0]): bytes(row[1]) for row in found}

    async def checkpoint_blob_hashes(self, session_id: str) -> set[str]:
        found = await self._fetch(self._sql.checkpoint_blob_hashes, (session_id,))
        return {str(row[0]) for row in found}
