"""What only the SQLite engine does: its file, its schema versions, its URL."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest

from blitz.store import open_store
from blitz.store.sqlite_connection import SqliteConnection
from blitz.store.sqlite_schema import MIGRATIONS


async def test_the_file_is_wal_and_at_the_latest_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "blitz.db"
    async with open_store(path):
        pass
    async with open_store(path):  # reopening migrates nothing twice
        pass
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "blitz.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="newer"):
        async with open_store(path):
            pass


async def test_an_older_file_keeps_its_histories_when_migrated(tmp_path: Path) -> None:
    """Version 3 kept the history in the sessions table; version 4 moves it out."""
    path = tmp_path / "blitz.db"
    db = sqlite3.connect(path)
    for number, script in enumerate(MIGRATIONS[:3], start=1):
        db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")
    db.execute(
        "INSERT INTO sessions (id, owner, title, workspace, model, labels, state, create_time,"
        " update_time, history) VALUES ('s1', '', '', 's1', 'demo', '{}', 1, 1, 1, x'01')"
    )
    db.commit()
    db.close()
    async with open_store(path) as store:
        assert await store.get_history("s1") == b"\x01"
        assert await store.get_session("s1") is not None


def test_an_unknown_database_url_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        open_store("mysql://x")


async def test_the_log_is_copied_back_on_a_thread_and_started_afresh_while_writes_go_on(
    tmp_path: Path,
) -> None:
    """Commits take no checkpoint on the loop's thread; the checkpoints that do keep the
    write-ahead log from growing for as long as writing goes on."""
    path = tmp_path / "blitz.db"
    sql = SqliteConnection(path, checkpoint_every=0.05)
    await sql.open()
    try:
        assert sql.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        await sql.execute("CREATE TABLE blobs (n INTEGER PRIMARY KEY, data BLOB)")
        written = 0
        wal = f"{path}-wal"
        biggest = 0
        # 24 MiB in 3,000 transactions, the loop turning between them: left alone, the
        # log would hold all of it.
        for n in range(3000):
            await sql.execute_many("INSERT INTO blobs VALUES (?, ?)", [(n, bytes(8192))])
            written += 8192
            biggest = max(biggest, _size(wal) or 0)
            await asyncio.sleep(0.001 if n % 10 == 0 else 0)
        assert biggest < written / 3, (biggest, written)
        (count,) = sql.db.execute("SELECT COUNT(*) FROM blobs").fetchone()
        assert count == 3000
    finally:
        await sql.close()
    assert _size(wal) is None, "closing the last connection removes the log"


def _size(path: str) -> int | None:
    return os.stat(path).st_size if os.path.exists(path) else None
