"""One SQLite connection on the event loop's thread, and the schema's migrations.

Every call runs one function — a statement, or a whole transaction — to its end on the
loop's thread: no transaction ever spans an await, so no other caller's statement can land
inside one. Opening (and migrating) the file runs on a thread, since it happens once and
may take a while.

Not on a thread of its own, as it was: SQLite answers Blitz's statements in tens to hundreds
of microseconds, less than a hop between threads costs, and a thread that runs Python needs
the GIL back after every statement. While the loop was busy with turns it won that race
rarely: a 0.3 ms append took 250 ms, a streaming turn starved every other session's store
calls for seconds, and half of a turn's CPU went to the hops (docs/benchmarks.md). The
price is that a statement blocks the loop while it runs: the engine is for one process and
its own file, and a long query blocks what a thread would have. Knows nothing of Blitz's
tables but the migrations it runs when it opens a file.

Checkpoints (the write-ahead log's pages copied back into the file, and synced) run on a
thread, on a connection of their own, once a second when anything was written: left to
SQLite, every thousandth page written made one commit on the loop's thread pay for a
whole checkpoint, fsync included (a 64 µs commit on average, 23 µs typical, 8 ms at
worst), and a page written a hundred times a second was copied back each time. The
loop's connection then copies back the few pages written during that checkpoint, syncs
included: only a log copied back whole starts afresh at the next write, and under steady
writes the thread's checkpoints alone never catch up with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import structlog

from blitz.store.sqlite_schema import MIGRATIONS

__all__ = ["CHECKPOINT_EVERY", "Row", "SqliteConnection", "transaction"]

log = structlog.get_logger(__name__)

# Seconds between checkpoints, while anything is written, unless told otherwise.
CHECKPOINT_EVERY = 1.0
# Bytes of write-ahead log kept on disk once it is copied back.
_LOG_KEPT = 32 * 2**20
# The connection's page cache, in KiB (SQLite's default is 2,000). Pages past it are read
# again from the operating system's cache, a few microseconds each; the default held
# 1.5 KB of the server's memory per parked turn at a thousand (docs/benchmarks.md).
_CACHE_KIB = 512

_T = TypeVar("_T")
Row = tuple[Any, ...]


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, rolled back if anything in it fails."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _migrate(db: sqlite3.Connection) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise RuntimeError(
            f"database schema version {version} is newer than this server knows "
            f"({len(MIGRATIONS)}); upgrade the server"
        )
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")


class SqliteConnection:
    """A file's one connection: opened (and migrated) on a thread, used on the loop's."""

    def __init__(self, path: str | Path, *, checkpoint_every: float = CHECKPOINT_EVERY) -> None:
        self._path = str(path)
        self._checkpoint_every = checkpoint_every
        self._db: sqlite3.Connection | None = None
        # The checkpoints' own connection, their task, and the one running on a thread.
        self._checkpoint_db: sqlite3.Connection | None = None
        self._checkpoints: asyncio.Task[None] | None = None
        self._checkpointing: asyncio.Future[None] | None = None

    async def open(self) -> None:
        if self._path == ":memory:":
            self._db = await asyncio.to_thread(self._connect)
            return
        Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._db = await asyncio.to_thread(self._connect)
        self._checkpoint_db = await asyncio.to_thread(self._connect_checkpoints)
        self._checkpoints = asyncio.create_task(
            self._checkpoint_loop(), name="blitz-sqlite-checkpoints"
        )

    async def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpoints
            self._checkpoints = None
        if self._checkpointing is not None:  # still on its thread: let it end
            try:
                await self._checkpointing
            except Exception:
                # The connection closes regardless, and its close checkpoints what is left.
                log.warning("sqlite_checkpoint_failed_at_close", exc_info=True)
            self._checkpointing = None
        if self._checkpoint_db is not None:
            self._checkpoint_db.close()
            self._checkpoint_db = None
        if self._db is not None:
            # The last connection: closing it checkpoints what is left, and removes the log.
            db, self._db = self._db, None
            db.close()

    async def _checkpoint_loop(self) -> None:
        written = self.db.total_changes
        while True:
            await asyncio.sleep(self._checkpoint_every)
            if self.db.total_changes == written:
                continue
            written = self.db.total_changes
            self._checkpointing = asyncio.ensure_future(asyncio.to_thread(self._checkpoint))
            try:
                await asyncio.shield(self._checkpointing)
                # The pages written meanwhile, a few, here: the log is then copied back
                # whole, and the next write starts it afresh instead of growing it.
                self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("sqlite_checkpoint_failed", exc_info=True)
            self._checkpointing = None

    @property
    def path(self) -> str:
        return self._path

    def _connect_checkpoints(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA cache_size=-64")  # it copies pages; it keeps none
        return db

    def _checkpoint(self) -> None:
        assert self._checkpoint_db is not None
        # PASSIVE: copies what no reader still needs, never waits for, nor blocks, a writer.
        self._checkpoint_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    async def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(*args)`, which uses `db`, to its end (on the loop's thread)."""
        if self._db is None:
            raise RuntimeError("store is not open")
        return fn(*args)

    @property
    def db(self) -> sqlite3.Connection:
        """The connection itself: for functions run by `call` only."""
        if self._db is None:
            raise RuntimeError("store is not open")
        return self._db

    def _connect(self) -> sqlite3.Connection:
        # Made on a thread, used on the loop's: never by two threads at once.
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode loses no committed transaction on a process crash (only
            # on power loss), and is several times faster than FULL.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            # Checkpoints are taken on a thread (see the module doc), not by commits.
            db.execute("PRAGMA wal_autocheckpoint=0")
            # A log grown by a burst is cut back to this when it starts afresh.
            db.execute(f"PRAGMA journal_size_limit={_LOG_KEPT}")
            db.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")
            _migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    async def execute(self, sql: str, params: Sequence[object] = ()) -> int:
        """One statement; the number of rows it changed."""
        return await self.call(lambda: self.db.execute(sql, params).rowcount)

    async def execute_many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        """One statement for each of `rows`, as one transaction."""

        def run() -> None:
            with transaction(self.db):
                self.db.executemany(sql, rows)

        await self.call(run)

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """Every row one query returns."""
        return await self.call(lambda: self.db.execute(sql, params).fetchall())
