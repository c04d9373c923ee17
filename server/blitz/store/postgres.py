"""The PostgreSQL engine: the store's contract in SQL over a pool of connections.

Selected by URL (`postgresql://…`); several replicas share one database. On psycopg 3 with
its async pool: each method is one statement or one transaction on a connection of the
pool. The operations of one statement are `SqlStore`'s, in the statements both engines
share (`statements.py`); here are the pool, the transactions, and what only PostgreSQL
does. Seqs are allocated by the database, per session, in the appending transaction
(`session_seqs`, whose row serialises a session's appenders), so they are gap-free and
strictly increasing whichever replica appends. Every appending transaction announces, at
its commit, which sessions reached which seq (`NOTIFY blitz_events`, ids and seqs only,
one notification per batch), for other replicas' live readers (`changes`). The schema is
`postgres_schema.py`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.adapt import AdaptersMap
from psycopg.rows import TupleRow
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool

from blitz.store import rows
from blitz.store.hook_statements import HookStatements
from blitz.store.postgres_schema import MIGRATIONS
from blitz.store.records import Changes, TurnControl
from blitz.store.schedule_statements import ScheduleStatements
from blitz.store.sql_store import SqlStore, Tx
from blitz.store.statements import Dialect, Statements
from blitz.store.webhook_statements import WebhookStatements
from blitz.store.writes import TurnStart, TurnWrite
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["CHANNEL", "PostgresStore"]

_T = TypeVar("_T")

# The channel appends and turn requests are announced on; payloads stay under
# PostgreSQL's 8,000 bytes.
CHANNEL = "blitz_events"
_PAYLOAD_MAX = 7000
# Seconds a transaction may sit idle before the database ends it, unless told (the lease).
STALLED_AFTER = 6.0
# An arbitrary key of the advisory lock that serialises migrations between replicas.
_MIGRATION_LOCK = 0x626C69747A

_DIALECT = Dialect(
    placeholder="%s",
    last_seq="COALESCE((SELECT last_seq FROM session_seqs WHERE session_id = sessions.id), 0)",
    label_is="labels ->> ? = ?",
    json="CAST(? AS JSONB)",
    steer_appended="steer || to_jsonb(CAST(? AS TEXT))",
    ledger_flags="COALESCE(BOOL_AND(priced), TRUE), COALESCE(BOOL_OR(tokens_unknown), FALSE)",
    json_texts="(SELECT jsonb_array_elements_text(CAST(? AS JSONB)))",
    lock_skipping=" FOR UPDATE OF {alias} SKIP LOCKED",
    lock=" FOR UPDATE",
)
# JSONB read as its text, as SQLite gives JSON: one conversion (rows.py) serves both.
_JSON_AS_TEXT = AdaptersMap(psycopg.adapters)
_JSON_AS_TEXT.register_loader("jsonb", TextLoader)
# A session's seqs are deleted with it, after the rest: appenders lock them after its turns.
_DELETE_SEQS = "DELETE FROM session_seqs WHERE session_id = %s"


class PostgresStore(SqlStore):
    """`async with PostgresStore(url) as store:` — opens the pool, migrates, closes."""

    _sql = Statements(_DIALECT)
    _hook_sql = WebhookStatements(_DIALECT)
    _schedule_sql = ScheduleStatements(_DIALECT)
    _hooks_sql = HookStatements(_DIALECT)

    def __init__(
        self, url: str, *, max_connections: int = 10, stalled_after: float = STALLED_AFTER
    ) -> None:
        """`stalled_after`: the seconds a transaction left open by a process that stalled
        (paused, cut off) lasts before the database ends it, so that the row locks it holds
        cannot keep another from taking over its turns for longer: the turn lease."""
        self._url = url
        stalled_ms = max(1, round(stalled_after * 1000))
        options = f"-c idle_in_transaction_session_timeout={stalled_ms}"
        self._pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            kwargs={"autocommit": True, "options": options, "context": _JSON_AS_TEXT},
        )

    @property
    def shared(self) -> bool:
        return True

    def lease_renewer(self, owner: str, *, timeout: float) -> _Renewer:
        return _Renewer(self._url, owner, timeout)

    async def open(self) -> None:
        await self._pool.open(wait=True, timeout=30)
        try:
            await self._migrate()
        except BaseException:
            await self._pool.close()
            raise

    async def close(self) -> None:
        await self._pool.close()

    async def _migrate(self) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS blitz_schema (version INTEGER)")
            row = await (await conn.execute("SELECT version FROM blitz_schema")).fetchone()
            if row is None:
                await conn.execute("INSERT INTO blitz_schema (version) VALUES (0)")
            version = row[0] if row else 0
            if version > len(MIGRATIONS):
                raise RuntimeError(
                    f"database schema version {version} is newer than this server knows "
                    f"({len(MIGRATIONS)}); upgrade the server"
                )
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                await conn.execute(script)  # type: ignore[arg-type]
                await conn.execute("UPDATE blitz_schema SET version = %s", (number,))

    async def _execute(self, sql: str, params: Sequence[object]) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    async def _fetch(self, sql: str, params: Sequence[object]) -> list[TupleRow]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def _execute_many(self, sql: str, params: Sequence[Sequence[object]]) -> None:
        async with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(sql, params)

    async def _ask(self, sql: str, args: Sequence[object]) -> bool:
        """Ask something of a turn (one UPDATE), announced at commit if it applied."""
        async with self._pool.connection() as conn, conn.transaction():
            if (await conn.execute(sql, args)).rowcount != 1:
                return False
            payload = json.dumps({"t": [[args[-2], args[-1]]]})
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        return True

    # Transactions

    async def _transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        async with self._pool.connection() as conn, conn.transaction():
            return await body(_PostgresTx(conn))

    async def delete_session(self, session_id: str) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            deleted = [
                (await conn.execute(sql, (session_id,))).rowcount
                for sql in self._sql.delete_session
            ]
            await conn.execute(_DELETE_SEQS, (session_id,))
        return deleted[-1] == 1  # the sessions table's, last

    async def take_steer(self, session_id: str, turn_id: str, *, close: bool = False) -> list[str]:
        taken = await self._fetch(
            "UPDATE turns SET steer = '[]', steer_open = steer_open AND NOT %s"
            " FROM (SELECT steer AS taken FROM turns WHERE session_id = %s AND turn_id = %s"
            "  FOR UPDATE) AS old"
            " WHERE session_id = %s AND turn_id = %s RETURNING old.taken",
            (close, session_id, turn_id, session_id, turn_id),
        )
        return json.loads(taken[0][0]) if taken else []

    async def keep_turn_history(self, session_id: str, turn_id: str, *, newest: int) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(self._sql.keep_turn_history, (session_id, turn_id, session_id, b""))
            await conn.execute(self._sql.older_turn_histories, (session_id, session_id, newest))

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
        try:
            async with self._pool.connection() as conn, conn.transaction():
                lost: set[tuple[str, str]] = set()
                for start in writes:
                    if isinstance(start, TurnStart):
                        *claim, create = self._starting(start)
                        if claim and (await conn.execute(*claim[0])).rowcount != 1:  # type: ignore[arg-type]
                            lost.add((start.session_id, start.turn_id))
                        else:
                            await conn.execute(*create)  # type: ignore[arg-type]
                held = {key: epoch for key, epoch in (fences or {}).items() if key not in lost}
                lost |= await _fenced_out(conn, held) if held else set()
                kept = [e for e in events if (e.session_id, e.turn_id) not in lost]
                counts: dict[str, int] = {}
                for event in kept:
                    counts[event.session_id] = counts.get(event.session_id, 0) + 1
                last: dict[str, int] = {}
                # In one order, so that two batches of the same sessions never deadlock.
                for sid in sorted(counts):
                    cur = await conn.execute(
                        "INSERT INTO session_seqs (session_id, last_seq) VALUES (%s, %s)"
                        " ON CONFLICT (session_id) DO UPDATE"
                        " SET last_seq = session_seqs.last_seq + EXCLUDED.last_seq"
                        " RETURNING last_seq",
                        (sid, counts[sid]),
                    )
                    row = await cur.fetchone()
                    assert row is not None
                    last[sid] = row[0]
                following = {sid: last[sid] - counts[sid] for sid in counts}
                stored = []
                for event in kept:
                    following[event.session_id] += 1
                    event.seq = following[event.session_id]
                    data = event.SerializeToString()
                    stored.append((event.session_id, event.seq, event.turn_id, data))
                if stored:
                    async with conn.cursor() as cur:
                        await cur.executemany(self._sql.append_event, stored)
                        outbox = rows.outbox_rows(kept)
                        if outbox:
                            await cur.executemany(self._hook_sql.add_outbox, outbox)
                        firsts = rows.first_seqs(kept)
                        if firsts:
                            await cur.executemany(self._sql.first_seq, firsts)
                for write in writes:
                    if (write.session_id, write.turn_id) not in lost and not isinstance(
                        write, TurnStart
                    ):
                        for sql, args in self._riding(write):
                            await conn.execute(sql, args)  # type: ignore[arg-type]
                for payload in _payloads(last):
                    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        except BaseException:
            for event in events:
                event.seq = 0
            raise
        return lost

    async def last_seqs(self, session_ids: Sequence[str]) -> dict[str, int]:
        found = await self._fetch(
            "SELECT session_id, last_seq FROM session_seqs WHERE session_id = ANY(%s)",
            (list(session_ids),),
        )
        return {row[0]: row[1] for row in found}

    async def changes(self) -> AsyncIterator[Changes]:
        """What every process (this one too) announces, a notification at a time.

        One connection of its own listens while the iterator is open; the first item, an
        empty one, says it listens. Notifications can be missed (a reconnect): readers must
        not rely on them alone (see EventLog).
        """
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            yield Changes()
            async for notify in conn.notifies():
                try:
                    yield _changes(json.loads(notify.payload))
                except (ValueError, TypeError, AttributeError):
                    continue
        finally:
            await conn.close()


class _PostgresTx:
    """`Tx` on one connection of the pool, inside its transaction."""

    def __init__(self, conn: psycopg.AsyncConnection[TupleRow]) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[object]) -> int:
        return (await self._conn.execute(sql, params)).rowcount  # type: ignore[arg-type]

    async def fetch(self, sql: str, params: Sequence[object]) -> list[TupleRow]:
        cur = await self._conn.execute(sql, params)  # type: ignore[arg-type]
        return await cur.fetchall()

    async def execute_many(self, sql: str, params: Sequence[Sequence[object]]) -> None:
        async with self._conn.cursor() as cur:
            await cur.executemany(sql, params)  # type: ignore[arg-type]


async def _fenced_out(
    conn: psycopg.AsyncConnection[TupleRow], fences: Mapping[tuple[str, str], int]
) -> set[tuple[str, str]]:
    """The fenced turns not running at their epoch any more. The others' rows stay locked
    (FOR KEY SHARE) until the append commits, so a claim of one (which locks FOR UPDATE)
    waits until its holder's events are in, while a renewal of its lease (a plain UPDATE,
    taken by a thread of the holder's own: `_Renewer`) does not."""
    keys = list(fences)
    cur = await conn.execute(
        "SELECT session_id, turn_id FROM turns WHERE (session_id, turn_id, epoch) IN"
        " (SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]))"
        " AND state = 'running' FOR KEY SHARE",
        ([k[0] for k in keys], [k[1] for k in keys], [fences[k] for k in keys]),
    )
    held = {(row[0], row[1]) for row in await cur.fetchall()}
    return set(keys) - held


def _changes(payload: Any) -> Changes:
    """A notification's payload: {"s": {session_id: seq}} or {"t": [[session_id, turn_id]]}."""
    seqs = {str(k): int(v) for k, v in payload.get("s", {}).items()}
    turns = tuple((str(sid), str(tid)) for sid, tid in payload.get("t", ()))
    return Changes(seqs=seqs, turns=turns)


def _payloads(last: dict[str, int]) -> list[str]:
    """{session_id: last seq} as JSON notification payloads, each under the limit."""
    payloads: list[str] = []
    part: dict[str, int] = {}
    size = 9  # {"s": {}}
    for sid, seq in last.items():
        entry = len(sid) + len(str(seq)) + 6
        if part and size + entry > _PAYLOAD_MAX:
            payloads.append(json.dumps({"s": part}))
            part, size = {}, 9
        part[sid] = seq
        size += entry
    if part:
        payloads.append(json.dumps({"s": part}))
    return payloads


# The renewer's statements. Rows another transaction has locked (one of this process's
# own writes of the turn, most often) are skipped, not waited for, and tried again.
_RENEW_UNLOCKED = (
    "UPDATE turns SET lease_until = %s WHERE (session_id, turn_id) IN"
    " (SELECT session_id, turn_id FROM turns WHERE owner = %s AND state = 'running'"
    "  FOR NO KEY UPDATE SKIP LOCKED)"
    " RETURNING session_id, turn_id, epoch, cancel_requested, steer <> '[]'"
)
_HELD = "SELECT COUNT(*) FROM turns WHERE owner = %s AND state = 'running'"
_RETRY_AFTER = 0.05  # seconds


class _Renewer:
    """`Store.lease_renewer`: one blocking connection, opened when first needed and again
    after a failure. A renewal waits for no row lock: the rows it skipped are tried again
    until `timeout`, and the answer leaves out any still locked then (the holder checks
    their rows: core/driver/holds.py)."""

    def __init__(self, url: str, owner: str, timeout: float) -> None:
        self._url = url
        self._owner = owner
        self._timeout = timeout
        self._conn: psycopg.Connection[TupleRow] | None = None

    def renew(self, lease_until: float) -> list[TurnControl]:
        deadline = time.monotonic() + self._timeout
        try:
            conn = self._connected()
            while True:
                found = conn.execute(_RENEW_UNLOCKED, (lease_until, self._owner)).fetchall()
                (held,) = conn.execute(_HELD, (self._owner,)).fetchone() or (0,)
                if len(found) >= held or time.monotonic() + _RETRY_AFTER > deadline:
                    return [rows.turn_control(row) for row in found]
                time.sleep(_RETRY_AFTER)
        except psycopg.Error:
            self.close()
            raise

    def _connected(self) -> psycopg.Connection[TupleRow]:
        if self._conn is None or self._conn.closed:
            ms = max(1, round(self._timeout * 1000))
            self._conn = psycopg.Connection.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(1, math.ceil(self._timeout)),
                options=f"-c statement_timeout={ms}",
            )
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
