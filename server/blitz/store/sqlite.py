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
import functools
import json
import sqlite3
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import Any, TypeVar

from blitz.store import rows
from blitz.store.hook_statements import HookStatements
from blitz.store.records import Changes, SessionRecord, TurnControl, WebhookRecord
from blitz.store.rows import Row
from blitz.store.schedule_statements import ScheduleStatements
from blitz.store.sql_store import SqlStore, Tx
from blitz.store.sql_webhooks import CLOCKS_AGREE
from blitz.store.sqlite_connection import CHECKPOINT_EVERY, SqliteConnection, transaction
from blitz.store.statements import Dialect, Statements
from blitz.store.webhook_statements import WebhookStatements
from blitz.store.writes import TurnStart, TurnWrite
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["SqliteStore"]

_T = TypeVar("_T")

_DIALECT = Dialect(
    placeholder="?",
    last_seq="(SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = sessions.id)",
    label_is="""json_extract(labels, '$."' || ? || '"') = ?""",
    json="?",
    steer_appended="json_insert(steer, '$[#]', ?)",
    ledger_flags="COALESCE(MIN(priced), 1), COALESCE(MAX(tokens_unknown), 0)",
)
# The fences of a batch, looked up in one statement: the turns (session_id, turn_id, epoch)
# each a row of the VALUES, and CROSS JOIN keeping them the outer loop, each a lookup of
# the turns' primary key. Those it returns are still held; at most `_FENCES_AT_ONCE` a time.
# The rows are padded to a power of two (the last repeated), so that a handful of
# statements, not one per count, take room in the connection's statement cache.
_FENCES_AT_ONCE = 256


@functools.cache
def _fences_held(count: int) -> str:
    rows = ", ".join(["(?, ?, ?)"] * count)
    return (
        f"SELECT f.column1, f.column2 FROM (VALUES {rows}) AS f CROSS JOIN turns AS t"
        " ON t.session_id = f.column1 AND t.turn_id = f.column2"
        " WHERE t.state = 'running' AND t.epoch = f.column3"
    )


def _fenced_out(
    db: sqlite3.Connection, fences: Mapping[tuple[str, str], int]
) -> set[tuple[str, str]]:
    """The fenced turns not running at their epoch any more."""
    keys = list(fences)
    held: set[tuple[str, str]] = set()
    for start in range(0, len(keys), _FENCES_AT_ONCE):
        some = keys[start : start + _FENCES_AT_ONCE]
        rows = 1 << (len(some) - 1).bit_length()
        some += some[-1:] * (rows - len(some))
        args = [value for key in some for value in (*key, fences[key])]
        held.update(db.execute(_fences_held(rows), args).fetchall())
    return set(keys) - held


# One MAX per session: SQLite answers it from the end of the primary key (O(log n)), where
# a GROUP BY over several sessions reads every event of each, which made every append of a
# long session dearer than the last.
_LAST_SEQ = "SELECT MAX(seq) FROM events WHERE session_id = ?"
# The sessions whose last seq an append remembers (each about 150 bytes), the least
# recently appended to forgotten first.
_LAST_SEQS_KEPT = 4096


class SqliteStore(SqlStore):
    """`async with SqliteStore(path) as store:` — opens, migrates, closes. The write-ahead
    log is checkpointed every `checkpoint_every` seconds while anything is written."""

    _sql = Statements(_DIALECT)
    _hook_sql = WebhookStatements(_DIALECT)
    _schedule_sql = ScheduleStatements(_DIALECT)
    _hooks_sql = HookStatements(_DIALECT)

    def __init__(self, path: str | Path, *, checkpoint_every: float = CHECKPOINT_EVERY) -> None:
        self._connection = SqliteConnection(path, checkpoint_every=checkpoint_every)
        self._execute = self._connection.execute
        self._execute_many = self._connection.execute_many
        self._fetch = self._connection.fetch
        self._call = self._connection.call
        # Each session's last seq as this process's appends left it: one process owns the
        # file and `_append` alone adds events, so the next append reads no MAX (a turn's
        # park is four or five appends, each of which read it). Set after a commit only;
        # a deleted session is forgotten.
        self._last_seqs: dict[str, int] = {}
        # Whether any webhook exists (None: not known, read at the next append). While none
        # does, the outbox rows an append would write are held here instead, for as long
        # as a webhook made now could want them (`CLOCKS_AGREE`), and written with the
        # next webhook made: a park no longer writes, and the dispatcher no longer
        # deletes, rows that no one hears of.
        self._webhooks: bool | None = None
        self._held: deque[Row] = deque()

    @property
    def shared(self) -> bool:
        return False  # one process owns the file

    def lease_renewer(self, owner: str, *, timeout: float) -> _Renewer:
        return _Renewer(self._connection.path, self._sql.renew_leases, owner, timeout)

    async def open(self) -> None:
        await self._connection.open()

    async def close(self) -> None:
        await self._connection.close()

    # Transactions: each a function run on the connection to its end.

    async def _transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        return await self._call(self._run_transaction, body)

    def _run_transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        db = self._connection.db
        with transaction(db):
            return _run_to_end(body(_SqliteTx(db)))  # type: ignore[arg-type]

    async def delete_session(self, session_id: str) -> bool:
        return await self._call(self._delete_session, session_id)

    def _delete_session(self, session_id: str) -> bool:
        db = self._connection.db
        self._last_seqs.pop(session_id, None)  # before: a failed delete only reads it again
        with transaction(db):
            deleted = [db.execute(sql, (session_id,)).rowcount for sql in self._sql.delete_session]
        self._held = deque(row for row in self._held if row[0] != session_id)
        return deleted[-1] == 1  # the sessions table's, last

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

    # Events

    async def append_events(
        self,
        events: Sequence[TurnEvent],
        *,
        fences: Mapping[tuple[str, str], int] | None = None,
        writes: Sequence[TurnWrite] = (),
    ) -> set[tuple[str, str]]:
        if not events and not writes:
            return set()
        return await self._call(self._append, events, fences or {}, writes)

    def _append(
        self,
        events: Sequence[TurnEvent],
        fences: Mapping[tuple[str, str], int],
        writes: Sequence[TurnWrite],
    ) -> set[tuple[str, str]]:
        db = self._connection.db
        lost: set[tuple[str, str]] = set()
        try:
            with transaction(db):
                for start in writes:
                    if isinstance(start, TurnStart):
                        *claim, create = self._starting(start)
                        if claim and db.execute(*claim[0]).rowcount != 1:
                            lost.add((start.session_id, start.turn_id))
                        else:
                            db.execute(*create)
                lost |= _fenced_out(db, {k: e for k, e in fences.items() if k not in lost})
                kept = [e for e in events if (e.session_id, e.turn_id) not in lost]
                last: dict[str, int] = {}
                for sid in {e.session_id for e in kept}:
                    known = self._last_seqs.get(sid)
                    if known is None:
                        (top,) = db.execute(_LAST_SEQ, (sid,)).fetchone()
                        known = top or 0
                    last[sid] = known
                stored = []
                for event in kept:
                    event.seq = last.get(event.session_id, 0) + 1
                    last[event.session_id] = event.seq
                    data = event.SerializeToString()
                    stored.append((event.session_id, event.seq, event.turn_id, data))
                db.executemany(self._sql.append_event, stored)
                outbox = rows.outbox_rows(kept)
                held = bool(outbox) and not self._any_webhooks(db)
                if outbox and not held:
                    db.executemany(self._hook_sql.add_outbox, outbox)
                firsts = rows.first_seqs(kept)
                if firsts:
                    db.executemany(self._sql.first_seq, firsts)
                for write in writes:
                    if (write.session_id, write.turn_id) not in lost and not isinstance(
                        write, TurnStart
                    ):
                        for sql, args in self._riding(write):
                            db.execute(sql, args)
        except BaseException:
            for event in events:
                event.seq = 0
            raise
        self._remember(last)
        if held:
            self._hold(outbox)
        return lost

    def _remember(self, last: Mapping[str, int]) -> None:
        """The sessions' last seqs after a committed append, most recent last."""
        kept = self._last_seqs
        for sid, seq in last.items():
            kept.pop(sid, None)
            kept[sid] = seq
        while len(kept) > _LAST_SEQS_KEPT:
            del kept[next(iter(kept))]

    def _any_webhooks(self, db: sqlite3.Connection) -> bool:
        if self._webhooks is None:
            self._webhooks = db.execute(self._hook_sql.webhooks_exist).fetchone() is not None
        return self._webhooks

    def _hold(self, outbox: Sequence[Row]) -> None:
        """Outbox rows an append held back, and those no webhook made now can want let go
        (stamped `CLOCKS_AGREE` or more before the newest)."""
        held = self._held
        held.extend(outbox)
        newest = outbox[-1][3]
        while held and held[0][3] < newest - CLOCKS_AGREE:
            held.popleft()

    def _write_held(self, db: sqlite3.Connection) -> None:
        """In a transaction that made a webhook: the rows held back, to the outbox."""
        if self._held:
            db.executemany(self._hook_sql.add_outbox, list(self._held))

    # Webhooks: what the outbox holds back depends on whether any exists.

    async def add_webhook(self, rec: WebhookRecord) -> None:
        await self._call(self._add_webhook, rec)

    def _add_webhook(self, rec: WebhookRecord) -> None:
        db = self._connection.db
        with transaction(db):
            db.execute(self._hook_sql.add_webhook, rows.webhook_params(rec))
            self._write_held(db)
        self._held.clear()
        self._webhooks = True

    async def declare_webhooks(self, recs: Sequence[WebhookRecord]) -> None:
        await super().declare_webhooks(recs)
        self._webhooks = None
        await self._call(self._declared)

    def _declared(self) -> None:
        db = self._connection.db
        if self._held and self._any_webhooks(db):
            with transaction(db):
                self._write_held(db)
            self._held.clear()

    async def delete_webhook(self, webhook_id: str) -> bool:
        deleted = await super().delete_webhook(webhook_id)
        self._webhooks = None
        return deleted

    async def create_session(self, rec: SessionRecord) -> None:
        await super().create_session(rec)
        self._remember({rec.id: 0})  # a new session has no events: its first append reads none

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


class _SqliteTx:
    """`Tx` on the one connection: each statement runs at once, inside the transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def execute(self, sql: str, params: Sequence[object]) -> int:
        return self._db.execute(sql, params).rowcount

    async def fetch(self, sql: str, params: Sequence[object]) -> list[Row]:
        return self._db.execute(sql, params).fetchall()

    async def execute_many(self, sql: str, params: Sequence[Sequence[object]]) -> None:
        self._db.executemany(sql, params)


def _run_to_end(body: Coroutine[Any, Any, _T]) -> _T:
    """The result of a transaction's body, run in one step: a body that would wait for
    anything (and so let another statement in) is an error, never a silent interleaving."""
    try:
        body.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    body.close()
    raise RuntimeError("a SQLite transaction's body waited for something")


class _Renewer:
    """`Store.lease_renewer` on a connection of its own to the same file (the contract
    holds every engine to it; only a shared store's leases use it)."""

    def __init__(self, path: str, statement: str, owner: str, timeout: float) -> None:
        self._db = sqlite3.connect(
            path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        self._statement = statement
        self._owner = owner

    def renew(self, lease_until: float) -> list[TurnControl]:
        found = self._db.execute(self._statement, (lease_until, self._owner)).fetchall()
        return [rows.turn_control(row) for row in found]

    def close(self) -> None:
        self._db.close()
