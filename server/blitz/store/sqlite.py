"""The SQLite engine: the store's contract in SQL over one file. The default.

One connection serves the whole process, on the event loop's thread
(`sqlite_connection.py`): each method is one statement or one transaction, run to its end
without an await, so it is one atomic step and has committed when it returns. The
operations of one statement are `SqlStore`'s, in the statements both engines share
(`statements.py`); here are the transactions, which run as plain functions on the
connection, and what only SQLite does: numbering events from the events themselves. The
schema is `sqlite_schema.py`, WAL its journal. One process owns the file: several
replicas need a server database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from pathlib import Path

from blitz.store import rows
from blitz.store.records import Changes, Checkpoint, SessionChange, TurnEnd, TurnRecord
from blitz.store.sql_store import SqlStore, Undone
from blitz.store.sqlite_connection import CHECKPOINT_EVERY, SqliteConnection, transaction
from blitz.store.statements import Dialect, Statements
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["SqliteStore"]

_DIALECT = Dialect(
    placeholder="?",
    last_seq="(SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = sessions.id)",
    label_is="""json_extract(labels, '$."' || ? || '"') = ?""",
    json="?",
    steer_appended="json_insert(steer, '$[#]', ?)",
    ledger_flags="COALESCE(MIN(priced), 1), COALESCE(MAX(tokens_unknown), 0)",
    in_texts="IN (SELECT value FROM json_each(?))",
)
_FENCE = (
    "SELECT 1 FROM turns WHERE session_id = ? AND turn_id = ? AND state = 'running' AND epoch = ?"
)
# One MAX per session: SQLite answers it from the end of the primary key (O(log n)), where
# a GROUP BY over several sessions reads every event of each, which made every append of a
# long session dearer than the last.
_LAST_SEQ = "SELECT MAX(seq) FROM events WHERE session_id = ?"


class SqliteStore(SqlStore):
    """`async with SqliteStore(path) as store:` — opens, migrates, closes. The write-ahead
    log is checkpointed every `checkpoint_every` seconds while anything is written."""

    _sql = Statements(_DIALECT)

    def __init__(self, path: str | Path, *, checkpoint_every: float = CHECKPOINT_EVERY) -> None:
        self._connection = SqliteConnection(path, checkpoint_every=checkpoint_every)
        self._execute = self._connection.execute
        self._execute_many = self._connection.execute_many
        self._fetch = self._connection.fetch
        self._call = self._connection.call

    @property
    def shared(self) -> bool:
        return False  # one process owns the file

    async def open(self) -> None:
        await self._connection.open()

    async def close(self) -> None:
        await self._connection.close()

    # Transactions: each a function run on the connection to its end.

    async def delete_session(self, session_id: str) -> bool:
        return await self._call(self._delete_session, session_id)

    def _delete_session(self, session_id: str) -> bool:
        db = self._connection.db
        with transaction(db):
            deleted = [db.execute(sql, (session_id,)).rowcount for sql in self._sql.delete_session]
        return deleted[-1] == 1  # the sessions table's, last

    async def create_turn(
        self, rec: TurnRecord, *, lease_until: float, session: SessionChange | None = None
    ) -> bool:
        return await self._call(self._create_turn, rec, lease_until, session)

    def _create_turn(
        self, rec: TurnRecord, lease_until: float, session: SessionChange | None
    ) -> bool:
        db = self._connection.db
        with transaction(db):
            if session is not None:
                sql, args = self._sql.update_session(rec.session_id, session)
                if db.execute(sql, args).rowcount != 1:
                    return False
            db.execute(self._sql.create_turn, rows.turn_params(rec, lease_until))
        return True

    async def start_queued(
        self, rec: TurnRecord, *, owner: str, lease_until: float, session: SessionChange
    ) -> TurnRecord | None:
        return await self._call(self._start_queued_now, rec, owner, lease_until, session)

    def _start_queued_now(
        self, rec: TurnRecord, owner: str, lease_until: float, session: SessionChange
    ) -> TurnRecord | None:
        db = self._connection.db
        try:
            with transaction(db):
                sql, args = self._sql.update_session(rec.session_id, session)
                if db.execute(sql, args).rowcount != 1:
                    return None
                started = db.execute(*self._start_queued(rec, owner, lease_until)).fetchone()
                if started is None:
                    raise Undone
        except Undone:
            return None
        return rows.turn(started)

    async def take_steer(self, session_id: str, turn_id: str, *, close: bool = False) -> list[str]:
        return await self._call(self._take_steer, session_id, turn_id, close)

    def _take_steer(self, session_id: str, turn_id: str, close: bool) -> list[str]:
        db = self._connection.db
        with transaction(db):
            row = db.execute(
                "SELECT steer FROM turns WHERE session_id = ? AND turn_id = ?",
                (session_id, turn_id),
            ).fetchone()
            db.execute(
                "UPDATE turns SET steer = '[]', steer_open = steer_open AND NOT ?"
                " WHERE session_id = ? AND turn_id = ?",
                (close, session_id, turn_id),
            )
        return json.loads(row[0]) if row else []

    async def keep_turn_history(self, session_id: str, turn_id: str, *, newest: int) -> None:
        await self._call(self._keep_turn_history, session_id, turn_id, newest)

    def _keep_turn_history(self, session_id: str, turn_id: str, newest: int) -> None:
        db = self._connection.db
        with transaction(db):
            db.execute(self._sql.keep_turn_history, (session_id, turn_id, session_id, b""))
            db.execute(self._sql.older_turn_histories, (session_id, session_id, newest))

    async def rewind(
        self, session_id: str, *, history: bytes, dropped: Sequence[str], change: SessionChange
    ) -> bool:
        return await self._call(self._rewind, session_id, history, dropped, change)

    def _rewind(
        self, session_id: str, history: bytes, dropped: Sequence[str], change: SessionChange
    ) -> bool:
        db = self._connection.db
        with transaction(db):
            sql, args = self._sql.update_session(session_id, change)
            if db.execute(sql, args).rowcount != 1:
                return False
            db.execute(self._sql.set_history, (session_id, history))
            db.executemany(self._sql.drop_turn_history, [(session_id, tid) for tid in dropped])
        return True

    async def put_checkpoint(self, checkpoint: Checkpoint, blobs: Mapping[str, bytes]) -> None:
        await self._call(self._put_checkpoint, checkpoint, blobs)

    def _put_checkpoint(self, checkpoint: Checkpoint, blobs: Mapping[str, bytes]) -> None:
        db = self._connection.db
        sid = checkpoint.session_id
        with transaction(db):
            db.executemany(
                self._sql.put_checkpoint_blob, [(sid, h, data) for h, data in blobs.items()]
            )
            db.execute(self._sql.put_checkpoint, rows.checkpoint_params(checkpoint))

    async def drop_checkpoints(
        self, session_id: str, *, turn_ids: Sequence[str], hashes: Collection[str]
    ) -> None:
        await self._call(self._drop_checkpoints, session_id, turn_ids, hashes)

    def _drop_checkpoints(
        self, session_id: str, turn_ids: Sequence[str], hashes: Collection[str]
    ) -> None:
        db = self._connection.db
        with transaction(db):
            db.executemany(self._sql.drop_checkpoint, [(session_id, tid) for tid in turn_ids])
            db.executemany(self._sql.drop_checkpoint_blob, [(session_id, h) for h in hashes])

    # Events

    async def append_events(
        self,
        events: Sequence[TurnEvent],
        *,
        fences: Mapping[tuple[str, str], int] | None = None,
        ends: Sequence[TurnEnd] = (),
    ) -> set[tuple[str, str]]:
        if not events:
            return set()
        return await self._call(self._append, events, fences or {}, ends)

    def _append(
        self,
        events: Sequence[TurnEvent],
        fences: Mapping[tuple[str, str], int],
        ends: Sequence[TurnEnd],
    ) -> set[tuple[str, str]]:
        db = self._connection.db
        lost: set[tuple[str, str]] = set()
        try:
            with transaction(db):
                for (sid, tid), epoch in fences.items():
                    if db.execute(_FENCE, (sid, tid, epoch)).fetchone() is None:
                        lost.add((sid, tid))
                kept = [e for e in events if (e.session_id, e.turn_id) not in lost]
                last: dict[str, int] = {}
                for sid in {e.session_id for e in kept}:
                    (top,) = db.execute(_LAST_SEQ, (sid,)).fetchone()
                    last[sid] = top or 0
                stored = []
                for event in kept:
                    event.seq = last.get(event.session_id, 0) + 1
                    last[event.session_id] = event.seq
                    data = event.SerializeToString()
                    stored.append((event.session_id, event.seq, event.turn_id, data))
                db.executemany(self._sql.append_event, stored)
                firsts = rows.first_seqs(kept)
                if firsts:
                    db.executemany(self._sql.first_seq, firsts)
                for end in ends:
                    if (end.session_id, end.turn_id) not in lost:
                        for sql, args in self._ending(end):
                            db.execute(sql, args)
        except BaseException:
            for event in events:
                event.seq = 0
            raise
        return lost

    async def last_seqs(self, session_ids: Sequence[str]) -> dict[str, int]:
        marks = ",".join("?" * len(session_ids))
        found = await self._fetch(
            f"SELECT session_id, MAX(seq) FROM events WHERE session_id IN ({marks})"
            " GROUP BY session_id",
            list(session_ids),
        )
        return {row[0]: row[1] for row in found}

    async def changes(self) -> AsyncIterator[Changes]:
        # One process owns the file: its own appends reach its readers directly.
        await asyncio.Event().wait()
        yield Changes()  # pragma: no cover - never reached
