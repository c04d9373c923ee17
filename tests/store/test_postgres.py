"""The PostgreSQL engine's own settings: what only a shared database needs."""

from __future__ import annotations

from blitz.store import open_store


async def test_a_transaction_a_stalled_process_left_open_lasts_no_longer_than_the_lease(
    postgres_database: str,
):
    """A paused replica inside a transaction holds row locks the others' takeover waits
    for: the database ends it after the turn lease, not after some fixed time."""
    async with open_store(postgres_database, lease=1.5) as store:
        async with store._pool.connection() as conn:  # type: ignore[attr-defined]
            cur = await conn.execute("SHOW idle_in_transaction_session_timeout")
            (timeout,) = await cur.fetchone()
    assert timeout in ("1500ms", "1500")
