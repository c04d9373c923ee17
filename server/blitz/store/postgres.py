"""The PostgreSQL engine: the store's contract in SQL over a pool of connections.

Selected by URL (`postgresql://…`); several replicas share one database. On psycopg 3 with
its async pool: each method is one statement or one transaction on a connection of the
pool. Seqs are allocated by the database, per session, in the appending transaction
(`session_seqs`, whose row serialises a session's appenders), so they are gap-free and
strictly increasing whichever replica appends. Every appending transaction announces, at
its commit, which sessions reached which seq (`NOTIFY blitz_events`, ids and seqs only,
one notification per batch), for other replicas' live readers (`changes`). The schema is
`postgres_schema.py`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from blitz.store import sql_parts
from blitz.store.postgres_schema import MIGRATIONS
from blitz.store.records import (
    Changes,
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
from blitz.store.sql_parts import (
    SESSION_TABLES,
    TURN_COLUMNS,
    due_parked_turns,
    older_turn_histories,
    session_update,
)
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["CHANNEL", "PostgresStore"]

# The channel appends and turn requests are announced on; payloads stay under
# PostgreSQL's 8,000 bytes.
CHANNEL = "blitz_events"
_PAYLOAD_MAX = 7000
# Milliseconds a transaction may sit idle before the database ends it.
_STALLED_TRANSACTION_MS = 5000
# An arbitrary key of the advisory lock that serialises migrations between replicas.
_MIGRATION_LOCK = 0x626C69747A

_SESSION_COLUMNS = (
    "id, owner, title, workspace, model, labels, state, create_time, update_time, turn_id,"
    " approval_timeout,"
    " COALESCE((SELECT last_seq FROM session_seqs WHERE session_id = sessions.id), 0),"
    " tasks, plan"
)
_PENDING_COLUMNS = "session_id, request_id, turn_id, event, expires, resolution"
_LEDGER_COLUMNS = (
    "session_id, turn_id, model, input, cached, cache_write, output, cost_usd, priced,"
    " search_queries, search_cost_usd, time,"
    " tokens_unknown"
)
_RULE_COLUMNS = (
    "id, scope, kind, scope_label, session_id, workspace, caller, create_time, request_id"
)
_IMAGE_COLUMNS = "id, session_id, media_type, data, create_time"
_TOKEN_COLUMNS = "id, name, hash, admin, create_time, revoke_time"


def _session(row: TupleRow) -> SessionRecord:
    return SessionRecord(*row)


def _turn(row: TupleRow) -> TurnRecord:
    values = list(row)
    values[2] = TurnState(values[2])
    values[3] = bytes(values[3])
    if values[10] is not None:
        values[10] = bytes(values[10])
    values[11] = bytes(values[11])
    return TurnRecord(*values)


def _pending(row: TupleRow) -> PendingRecord:
    values = list(row)
    values[3] = bytes(values[3])
    return PendingRecord(*values)


def _marks(count: int) -> str:
    return ",".join(["%s"] * count)


class PostgresStore:
    """`async with PostgresStore(url) as store:` — opens the pool, migrates, closes."""

    def __init__(self, url: str, *, max_connections: int = 10) -> None:
        self._url = url
        # A transaction left open by a process that stalled (paused, cut off) ends after
        # this long, so that the row locks it holds cannot keep another from taking over.
        options = f"-c idle_in_transaction_session_timeout={_STALLED_TRANSACTION_MS}"
        self._pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            kwargs={"autocommit": True, "options": options},
        )

    @property
    def shared(self) -> bool:
        return True

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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

    async def _execute(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)  # type: ignore[arg-type]
            return cur.rowcount

    async def _fetch(self, sql: str, params: Sequence[object] = ()) -> list[TupleRow]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)  # type: ignore[arg-type]
            return await cur.fetchall()

    # Sessions

    async def create_session(self, rec: SessionRecord) -> None:
        await self._execute(
            "INSERT INTO sessions (id, owner, title, workspace, model, labels, state,"
            " create_time, update_time, turn_id, approval_timeout, tasks, plan)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (
                rec.id,
                rec.owner,
                rec.title,
                rec.workspace,
                rec.model,
                Jsonb(rec.labels),
                rec.state,
                rec.create_time,
                rec.update_time,
                rec.turn_id,
                rec.approval_timeout,
                rec.tasks,
                rec.plan,
            ),
        )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        rows = await self._fetch(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = %s", (session_id,)
        )
        return _session(rows[0]) if rows else None

    async def list_sessions(self, query: SessionQuery) -> list[SessionRecord]:
        where: list[str] = ["TRUE"]
        args: list[object] = []
        if query.owner is not None:
            where.append("owner = %s")
            args.append(query.owner)
        if query.state:
            where.append("state = %s")
            args.append(query.state)
        if query.before is not None:
            when, last_id = query.before
            where.append("(create_time < %s OR (create_time = %s AND id < %s))")
            args += [when, when, last_id]
        for key, value in query.labels.items():
            where.append("labels ->> %s = %s")
            args += [key, value]
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)}"
            " ORDER BY create_time DESC, id DESC LIMIT %s"
        )
        return [_session(row) for row in await self._fetch(sql, (*args, query.limit))]

    async def update_session(self, session_id: str, change: SessionChange) -> bool:
        sql, args = session_update(session_id, change, "%s")
        return await self._execute(sql, args) == 1

    async def delete_session(self, session_id: str) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            deleted = 0
            for table, key in (*SESSION_TABLES, ("session_seqs", "session_id")):
                cur = await conn.execute(
                    f"DELETE FROM {table} WHERE {key} = %s",  # type: ignore[arg-type]
                    (session_id,),
                )
                deleted = cur.rowcount if table == "sessions" else deleted
            return deleted == 1

    # Turns

    async def list_turns(self, page: TurnPage) -> list[TurnRecord]:
        where, args = "session_id = %s", list[object]([page.session_id])
        if page.after is not None:
            when, last_id = page.after
            where += " AND (create_time > %s OR (create_time = %s AND turn_id > %s))"
            args += [when, when, last_id]
        rows = await self._fetch(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE {where}"
            " ORDER BY create_time, turn_id LIMIT %s",
            (*args, page.limit),
        )
        return [_turn(row) for row in rows]

    async def create_turn(
        self, rec: TurnRecord, *, lease_until: float, session: SessionChange | None = None
    ) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            if session is not None:
                sql, args = session_update(rec.session_id, session, "%s")
                if (await conn.execute(sql, args)).rowcount != 1:  # type: ignore[arg-type]
                    return False
            await conn.execute(
                f"INSERT INTO turns ({TURN_COLUMNS}, lease_until) VALUES ({_marks(15)})",
                (
                    rec.session_id,
                    rec.turn_id,
                    rec.state.value,
                    rec.turn,
                    rec.create_time,
                    rec.deadline,
                    rec.first_seq,
                    rec.model_calls,
                    rec.cost_usd,
                    Jsonb(rec.steer),
                    rec.history,
                    rec.usage_before,
                    rec.owner,
                    rec.epoch,
                    lease_until,
                ),
            )
        return True

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        rows = await self._fetch(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = %s AND turn_id = %s",
            (session_id, turn_id),
        )
        return _turn(rows[0]) if rows else None

    async def update_turn(self, rec: TurnRecord) -> bool:
        changed = await self._execute(
            "UPDATE turns SET state = %(state)s, first_seq = %(first_seq)s,"
            " model_calls = %(model_calls)s, cost_usd = %(cost_usd)s, history = %(history)s,"
            " owner = CASE WHEN %(state)s = 'running' THEN owner ELSE '' END"
            " WHERE session_id = %(sid)s AND turn_id = %(tid)s AND epoch = %(epoch)s"
            " AND state = 'running'",
            {
                "state": rec.state.value,
                "first_seq": rec.first_seq,
                "model_calls": rec.model_calls,
                "cost_usd": rec.cost_usd,
                "history": rec.history,
                "sid": rec.session_id,
                "tid": rec.turn_id,
                "epoch": rec.epoch,
            },
        )
        return changed == 1

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
        sql, args = sql_parts.claim_turn(
            "%s",
            session_id,
            turn_id,
            state=state.value,
            owner=owner,
            lease_until=lease_until,
            expired_before=expired_before,
        )
        rows = await self._fetch(sql, args)
        return _turn(rows[0]) if rows else None

    async def renew_leases(self, owner: str, *, lease_until: float) -> list[TurnControl]:
        rows = await self._fetch(
            "UPDATE turns SET lease_until = %s WHERE owner = %s AND state = 'running'"
            " RETURNING session_id, turn_id, epoch, cancel_requested,"
            " jsonb_array_length(steer) > 0",
            (lease_until, owner),
        )
        return [TurnControl(*row) for row in rows]

    async def turns_in_state(
        self,
        state: TurnState,
        *,
        lease_ended_before: float | None = None,
        session_id: str | None = None,
    ) -> list[TurnRecord]:
        sql = f"SELECT {TURN_COLUMNS} FROM turns WHERE state = %s"
        args: list[object] = [state.value]
        if lease_ended_before is not None:
            sql += " AND (lease_until IS NULL OR lease_until < %s)"
            args.append(lease_ended_before)
        if session_id is not None:
            sql += " AND session_id = %s"
            args.append(session_id)
        return [_turn(row) for row in await self._fetch(sql, args)]

    async def count_turns(self, state: TurnState) -> int:
        rows = await self._fetch("SELECT COUNT(*) FROM turns WHERE state = %s", (state.value,))
        return int(rows[0][0])

    async def parked_turns_due(self, *, now: float, settled_before: float) -> list[TurnRecord]:
        sql, args = due_parked_turns("%s", now, settled_before)
        return [_turn(row) for row in await self._fetch(sql, args)]

    async def request_cancel(self, session_id: str, turn_id: str) -> bool:
        return await self._asking(
            "UPDATE turns SET cancel_requested = TRUE"
            " WHERE session_id = %s AND turn_id = %s AND state <> 'finished'",
            (session_id, turn_id),
        )

    async def add_steer(self, session_id: str, turn_id: str, text: str) -> bool:
        return await self._asking(
            "UPDATE turns SET steer = steer || %s"
            " WHERE session_id = %s AND turn_id = %s AND state <> 'finished' AND steer_open",
            (Jsonb([text]), session_id, turn_id),
        )

    async def _asking(self, sql: str, args: tuple[object, ...]) -> bool:
        """Ask something of a turn (one UPDATE), announced at commit if it applied."""
        async with self._pool.connection() as conn, conn.transaction():
            if (await conn.execute(sql, args)).rowcount != 1:  # type: ignore[arg-type]
                return False
            payload = json.dumps({"t": [[args[-2], args[-1]]]})
            await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        return True

    async def take_steer(self, session_id: str, turn_id: str, *, close: bool = False) -> list[str]:
        rows = await self._fetch(
            "UPDATE turns SET steer = '[]', steer_open = steer_open AND NOT %s"
            " FROM (SELECT steer AS taken FROM turns WHERE session_id = %s AND turn_id = %s"
            "  FOR UPDATE) AS old"
            " WHERE session_id = %s AND turn_id = %s RETURNING old.taken",
            (close, session_id, turn_id, session_id, turn_id),
        )
        return list(rows[0][0]) if rows else []

    # Events

    async def append_events(
        self,
        events: Sequence[TurnEvent],
        *,
        fences: Mapping[tuple[str, str], int] | None = None,
    ) -> set[tuple[str, str]]:
        if not events:
            return set()
        try:
            async with self._pool.connection() as conn, conn.transaction():
                lost = await _fenced_out(conn, fences) if fences else set()
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
                rows = []
                for event in kept:
                    following[event.session_id] += 1
                    event.seq = following[event.session_id]
                    data = event.SerializeToString()
                    rows.append((event.session_id, event.seq, event.turn_id, data))
                if rows:
                    async with conn.cursor() as cur:
                        await cur.executemany(
                            "INSERT INTO events (session_id, seq, turn_id, data)"
                            " VALUES (%s, %s, %s, %s)",
                            rows,
                        )
                        sql, firsts = sql_parts.first_seqs(kept, "%s")
                        if firsts:
                            await cur.executemany(sql, firsts)
                for payload in _payloads(last):
                    await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        except BaseException:
            for event in events:
                event.seq = 0
            raise
        return lost

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        rows = await self._fetch(
            "SELECT seq, turn_id, data FROM events WHERE session_id = %s AND seq > %s"
            " ORDER BY seq LIMIT %s",
            (session_id, after_seq, limit),
        )
        return [EventRow(session_id, row[0], row[1], bytes(row[2])) for row in rows]

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        rows = await self._fetch(
            "SELECT seq, data FROM events WHERE session_id = %s AND turn_id = %s"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, turn_id),
        )
        return EventRow(session_id, rows[0][0], turn_id, bytes(rows[0][1])) if rows else None

    async def last_seqs(self, session_ids: Sequence[str]) -> dict[str, int]:
        rows = await self._fetch(
            "SELECT session_id, last_seq FROM session_seqs WHERE session_id = ANY(%s)",
            (list(session_ids),),
        )
        return {row[0]: row[1] for row in rows}

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

    # Pending requests

    async def put_pending(self, recs: Sequence[PendingRecord]) -> None:
        async with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(
                f"INSERT INTO pending ({_PENDING_COLUMNS}) VALUES ({_marks(6)})"
                " ON CONFLICT (session_id, request_id) DO UPDATE SET turn_id = EXCLUDED.turn_id,"
                " event = EXCLUDED.event, expires = EXCLUDED.expires,"
                " resolution = EXCLUDED.resolution, resolve_time = NULL",
                [
                    (r.session_id, r.request_id, r.turn_id, r.event, r.expires, r.resolution)
                    for r in recs
                ],
            )

    async def stamp_pending(self, session_id: str, request_id: str, event: bytes) -> None:
        await self._execute(
            "UPDATE pending SET event = %s WHERE session_id = %s AND request_id = %s",
            (event, session_id, request_id),
        )

    async def list_pending(
        self,
        session_id: str,
        *,
        turn_id: str | None = None,
        request_id: str | None = None,
        open_only: bool = True,
    ) -> list[PendingRecord]:
        sql = f"SELECT {_PENDING_COLUMNS} FROM pending WHERE session_id = %s"
        args: list[object] = [session_id]
        if turn_id is not None:
            sql += " AND turn_id = %s"
            args.append(turn_id)
        if request_id is not None:
            sql += " AND request_id = %s"
            args.append(request_id)
        if open_only:
            sql += " AND resolution IS NULL"
        return [_pending(row) for row in await self._fetch(sql + " ORDER BY request_id", args)]

    async def resolve_pending(self, session_id: str, request_id: str, resolution: str) -> bool:
        changed = await self._execute(
            "UPDATE pending SET resolution = %s, resolve_time = %s"
            " WHERE session_id = %s AND request_id = %s AND resolution IS NULL",
            (resolution, time.time(), session_id, request_id),
        )
        return changed == 1

    # Usage ledger

    async def add_ledger(self, row: LedgerRow) -> None:
        await self._execute(
            f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES ({_marks(13)})",
            (
                row.session_id,
                row.turn_id,
                row.model,
                row.input,
                row.cached,
                row.cache_write,
                row.output,
                row.cost_usd,
                row.priced,
                row.search_queries,
                row.search_cost_usd,
                row.time,
                row.tokens_unknown,
            ),
        )

    async def ledger(self, session_id: str) -> list[LedgerRow]:
        rows = await self._fetch(
            f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE session_id = %s ORDER BY id",
            (session_id,),
        )
        return [LedgerRow(*row) for row in rows]

    async def usage_totals(self, session_id: str) -> UsageTotals:
        (r,) = await self._fetch(
            "SELECT COUNT(*), COALESCE(SUM(input), 0)::BIGINT, COALESCE(SUM(cached), 0)::BIGINT,"
            " COALESCE(SUM(cache_write), 0)::BIGINT, COALESCE(SUM(output), 0)::BIGINT,"
            " COALESCE(SUM(cost_usd), 0), COALESCE(BOOL_AND(priced), TRUE),"
            " COALESCE(SUM(search_queries), 0)::BIGINT, COALESCE(SUM(search_cost_usd), 0),"
            " (SELECT input FROM ledger"
            "  WHERE session_id = %s ORDER BY id DESC LIMIT 1),"
            " COALESCE(BOOL_OR(tokens_unknown), FALSE)"
            " FROM ledger WHERE session_id = %s",
            (session_id, session_id),
        )
        return UsageTotals(
            calls=r[0],
            input=r[1],
            cached=r[2],
            cache_write=r[3],
            output=r[4],
            cost_usd=r[5],
            priced=r[6],
            search_queries=r[7],
            search_cost_usd=r[8],
            last_prompt=r[9] or 0,
            tokens_unknown=r[10],
        )

    # Approval rules

    async def add_rule(self, rule: RuleRecord) -> None:
        await self._execute(
            f"INSERT INTO rules ({_RULE_COLUMNS}) VALUES ({_marks(9)})",
            (
                rule.id,
                rule.scope,
                rule.kind,
                rule.scope_label,
                rule.session_id,
                rule.workspace,
                rule.caller,
                rule.create_time,
                rule.request_id,
            ),
        )

    async def rules_for(self, *, session_id: str, caller: str) -> list[RuleRecord]:
        rows = await self._fetch(
            f"SELECT {_RULE_COLUMNS} FROM rules WHERE (scope = 1 AND session_id = %s)"
            " OR (scope = 2 AND caller = %s) ORDER BY create_time, id",
            (session_id, caller),
        )
        return [RuleRecord(*row) for row in rows]

    async def delete_rule(self, rule_id: str) -> bool:
        return await self._execute("DELETE FROM rules WHERE id = %s", (rule_id,)) == 1

    # Images

    async def add_image(self, image: ImageRecord) -> None:
        await self._execute(
            f"INSERT INTO images ({_IMAGE_COLUMNS}) VALUES ({_marks(5)})",
            (image.id, image.session_id, image.media_type, image.data, image.create_time),
        )

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None:
        rows = await self._fetch(
            f"SELECT {_IMAGE_COLUMNS} FROM images WHERE session_id = %s AND id = %s",
            (session_id, image_id),
        )
        if not rows:
            return None
        values: list[Any] = list(rows[0])
        values[3] = bytes(values[3])
        return ImageRecord(*values)

    # Bearer tokens

    async def add_token(self, token: TokenRecord) -> None:
        await self._execute(
            f"INSERT INTO tokens ({_TOKEN_COLUMNS}) VALUES ({_marks(6)})",
            (token.id, token.name, token.hash, token.admin, token.create_time, token.revoke_time),
        )

    async def find_token(self, hash: str) -> TokenRecord | None:
        rows = await self._fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE hash = %s", (hash,))
        return TokenRecord(*rows[0]) if rows else None

    async def list_tokens(self) -> list[TokenRecord]:
        rows = await self._fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens ORDER BY create_time, id")
        return [TokenRecord(*row) for row in rows]

    async def revoke_tokens(self, id_or_name: str, *, now: float) -> int:
        return await self._execute(
            "UPDATE tokens SET revoke_time = %s"
            " WHERE (id = %s OR name = %s) AND revoke_time IS NULL",
            (now, id_or_name, id_or_name),
        )

    async def ping(self) -> None:
        await self._fetch("SELECT 1")

    # Agent state

    async def get_history(self, session_id: str) -> bytes | None:
        rows = await self._fetch(
            "SELECT history FROM histories WHERE session_id = %s", (session_id,)
        )
        return bytes(rows[0][0]) if rows else None

    async def set_history(self, session_id: str, history: bytes) -> None:
        await self._execute(
            "INSERT INTO histories (session_id, history) VALUES (%s, %s)"
            " ON CONFLICT (session_id) DO UPDATE SET history = EXCLUDED.history",
            (session_id, history),
        )

    async def keep_turn_history(self, session_id: str, turn_id: str, *, newest: int) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO turn_histories (session_id, turn_id, history)"
                " VALUES (%s, %s, COALESCE("
                "  (SELECT history FROM histories WHERE session_id = %s), '\\x'::bytea))"
                " ON CONFLICT (session_id, turn_id)"
                " DO UPDATE SET history = EXCLUDED.history",
                (session_id, turn_id, session_id),
            )
            await conn.execute(older_turn_histories("%s"), (session_id, session_id, newest))

    async def get_turn_history(self, session_id: str, turn_id: str) -> bytes | None:
        rows = await self._fetch(
            "SELECT history FROM turn_histories WHERE session_id = %s AND turn_id = %s",
            (session_id, turn_id),
        )
        return bytes(rows[0][0]) if rows else None

    # Workspace files as they were

    async def keep_original(self, original: FileOriginal) -> bool:
        stored = await self._execute(
            "INSERT INTO file_originals (session_id, path, content) VALUES (%s, %s, %s)"
            " ON CONFLICT (session_id, path) DO NOTHING",
            (original.session_id, original.path, original.content),
        )
        return stored == 1

    async def originals(self, session_id: str) -> list[FileOriginal]:
        rows = await self._fetch(
            "SELECT path, content FROM file_originals WHERE session_id = %s ORDER BY path",
            (session_id,),
        )
        return [
            FileOriginal(session_id, path, None if content is None else bytes(content))
            for path, content in rows
        ]


async def _fenced_out(
    conn: psycopg.AsyncConnection[TupleRow], fences: Mapping[tuple[str, str], int]
) -> set[tuple[str, str]]:
    """The fenced turns not running at their epoch any more. The others' rows stay locked
    (FOR SHARE) until the append commits, so a claim of one waits until its holder's
    events are in."""
    keys = list(fences)
    cur = await conn.execute(
        "SELECT session_id, turn_id FROM turns WHERE (session_id, turn_id, epoch) IN"
        " (SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]))"
        " AND state = 'running' FOR SHARE",
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
