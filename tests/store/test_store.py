"""The storage interface, run against every engine (SQLite here; more engines join the list)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from blitz.store import (
    EventRow,
    LedgerRow,
    PendingRecord,
    SessionRecord,
    Store,
    TurnRecord,
    UsageTotals,
    open_store,
)
from blitz.store.sqlite import MIGRATIONS


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with open_store(f"sqlite:///{tmp_path}/blitz.db") as opened:
        yield opened


def session(id: str = "s1", **kw: object) -> SessionRecord:
    base = dict(
        owner="", title="t", workspace=id, model="demo", state=1, create_time=1.0, update_time=1.0
    )
    base.update(kw)
    return SessionRecord(id=id, **base)  # type: ignore[arg-type]


async def test_sqlite_file_is_wal_and_at_the_latest_schema_version(tmp_path: Path) -> None:
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


async def test_sessions_page_newest_first_and_filter_by_label_and_state(store: Store) -> None:
    for i in range(5):
        await store.create_session(
            session(f"s{i}", create_time=float(i), labels={"team": "a" if i % 2 else "b"})
        )
    page = await store.list_sessions(owner="", state=0, labels={}, limit=2, before=None)
    assert [r.id for r in page] == ["s4", "s3"]
    page = await store.list_sessions(owner="", state=0, labels={}, limit=10, before=(3.0, "s3"))
    assert [r.id for r in page] == ["s2", "s1", "s0"]
    assert [
        r.id
        for r in await store.list_sessions(
            owner="", state=0, labels={"team": "a"}, limit=10, before=None
        )
    ] == ["s3", "s1"]
    await store.set_session_state("s1", state=4, turn_id="", now=9.0)
    assert [
        r.id for r in await store.list_sessions(owner="", state=4, labels={}, limit=10, before=None)
    ] == ["s1"]
    assert (
        await store.list_sessions(owner="someone", state=0, labels={}, limit=10, before=None) == []
    )


async def test_events_are_read_in_seq_order_after_a_given_seq(store: Store) -> None:
    await store.append_events([EventRow("s1", n, "t1", bytes([n])) for n in range(1, 6)])
    assert await store.last_seq("s1") == 5
    assert await store.last_seq("other") == 0
    rows = await store.read_events("s1", after_seq=2, limit=2)
    assert [(r.seq, r.data) for r in rows] == [(3, b"\x03"), (4, b"\x04")]


async def test_a_duplicate_seq_is_rejected_and_writes_nothing(store: Store) -> None:
    await store.append_events([EventRow("s1", 1, "t1", b"a")])
    with pytest.raises(sqlite3.IntegrityError):
        await store.append_events([EventRow("s1", 2, "t1", b"b"), EventRow("s1", 1, "t1", b"c")])
    assert [r.seq for r in await store.read_events("s1", after_seq=0, limit=10)] == [1]


async def test_only_the_first_resolution_wins(store: Store) -> None:
    await store.add_pending([PendingRecord("s1", "r1", "t1", b"ev")])
    results = await asyncio.gather(
        *(store.resolve_pending("s1", "r1", f'{{"n": {i}}}') for i in range(5))
    )
    assert sorted(results) == [False] * 4 + [True]
    assert await store.list_pending("s1") == []
    (done,) = await store.list_pending("s1", open_only=False)
    assert done.resolution is not None


async def test_turn_state_moves_only_from_the_expected_state(store: Store) -> None:
    rec = TurnRecord("s1", "t1", "parked", b"turn", 1.0, steer=["a"], history=b"h")
    await store.create_turn(rec)
    assert await store.set_turn_state("s1", "t1", state="running", expect="parked")
    assert not await store.set_turn_state("s1", "t1", state="running", expect="parked")
    got = await store.get_turn("s1", "t1")
    assert got is not None and got.state == "running" and got.steer == ["a"] and got.history == b"h"
    assert [r.turn_id for r in await store.turns_in_state("running")] == ["t1"]


async def test_ledger_and_history_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "blitz.db"
    async with open_store(path) as first:
        await first.create_session(session())
        await first.add_ledger(
            LedgerRow("s1", "t1", "demo", input=10, output=5, cost_usd=0.5, priced=False)
        )
        await first.set_history("s1", b"history")
    async with open_store(path) as second:
        (row,) = await second.ledger("s1")
        assert (row.input, row.output, row.cost_usd, row.priced) == (10, 5, 0.5, False)
        assert await second.get_history("s1") == b"history"


async def test_usage_totals_sum_the_ledger_and_unknown_prices_stay_unknown(store: Store) -> None:
    await store.create_session(session())
    assert await store.usage_totals("s1") == UsageTotals()
    await store.add_ledger(
        LedgerRow("s1", "t1", "a", input=10, cached=4, output=5, cost_usd=0.25, search_queries=1)
    )
    await store.add_ledger(
        LedgerRow("s1", "t2", "b", input=7, cache_write=2, output=1, priced=False, time=1.0)
    )
    await store.add_ledger(LedgerRow("s2", "t9", "a", input=1000, cost_usd=9.0))

    assert await store.usage_totals("s1") == UsageTotals(
        calls=2,
        input=17,
        cached=4,
        cache_write=2,
        output=6,
        cost_usd=0.25,
        priced=False,
        search_queries=1,
        last_prompt=9,
    )


async def test_last_event_of_turn(store: Store) -> None:
    await store.create_session(session())
    await store.append_events(
        [
            EventRow("s1", 1, "t1", b"a"),
            EventRow("s1", 2, "t1", b"b"),
            EventRow("s1", 3, "t2", b"c"),
        ]
    )
    last = await store.last_event_of_turn("s1", "t1")
    assert last is not None and (last.seq, last.data) == (2, b"b")
    assert await store.last_event_of_turn("s1", "t9") is None


async def test_many_tasks_writing_at_once_all_succeed(store: Store) -> None:
    # As a busy server does: the event writer's batches beside turns parking and resolving.
    # A cursor left to the garbage collector made some of these fail with "API misuse".
    await store.create_session(session())

    async def write_events() -> None:
        for batch in range(300):
            rows = [EventRow("s1", batch * 10 + i + 1, "t1", b"x" * 100) for i in range(10)]
            await store.append_events(rows)

    async def park_and_resolve(task: int) -> None:
        for i in range(300):
            request_id = f"r{task}-{i}"
            await store.add_pending([PendingRecord("s1", request_id, "t1", b"event")])
            await store.last_seq("s1")
            assert await store.resolve_pending("s1", request_id, "{}")

    await asyncio.gather(write_events(), *(park_and_resolve(task) for task in range(6)))
    assert await store.last_seq("s1") == 3000


def test_unknown_database_url_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        open_store("mysql://x")
