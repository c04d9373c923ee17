"""One SQLite connection on a thread of its own, and the schema's migrations.

Every call hands the thread one function — a statement, or a whole transaction — and
awaits it: one hop between threads per call, and no transaction ever spans an await, so no
other caller's statement can land inside one. Knows nothing of Blitz's tables but the
migrations it runs when it opens a file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from blitz.store.sqlite_schema import MIGRATIONS

__all__ = ["Row", "SqliteConnection", "transaction"]

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
    """A file's one connection, opened (and migrated) and closed on its thread."""

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        self._thread: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="blitz-sqlite")
        try:
            await self.call(self._connect)
        except BaseException:
            self._thread.shutdown(wait=False)
            self._thread = None
            raise

    async def close(self) -> None:
        if self._thread is not None:
            if self._db is not None:
                await self.call(self._db.close)
                self._db = None
            thread, self._thread = self._thread, None
            thread.shutdown(wait=True)

    async def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(*args)` on the connection's thread; `fn` uses `db`."""
        if self._thread is None:
            raise RuntimeError("store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    @property
    def db(self) -> sqlite3.Connection:
        """The connection itself: for functions run by `call`, on its thread, only."""
        if self._db is None:
            raise RuntimeError("store is not open")
        return self._db

    def _connect(self) -> None:
        db = sqlite3.connect(self._path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode loses no committed transaction on a process crash (only
            # on power loss), and is several times faster than FULL.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            _migrate(db)
        except BaseException:
            db.close()
            raise
        self._db = db

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
