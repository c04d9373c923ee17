"""Leases: a process keeps the turns it runs, and takes over those of a process that died.

Only where processes share the store. Every third of a lease (`--turn-lease`), one task:

1. renews the leases of the turns this process holds (one statement for all of them). A
   turn missing from the answer was taken over while this process could not renew (it
   was paused, or cut off from the database): it is stopped here without a further write,
   its events being fenced anyway. The answer also says which turns someone asked to
   cancel or to take steer text, so a cancel reaches its turn even if its announcement
   was missed (`Turns.renewed` acts on the answer); an announcement (`Turns.on_asked`)
   makes the renewal come at once;
2. sweeps: takes over running turns whose lease ended (their holder died), settles
   parked turns that need someone and starts queues left idle (`recovery.py`), and
   counts the parked turns.

So a turn whose holder died is ended by another process within about a lease and a third.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import structlog

from blitz.core.driver.recovery import Recovery
from blitz.core.driver.turns import Turns
from blitz.core.supervisor import Supervisor, raise_if_cancelled
from blitz.store import Store, TurnState

__all__ = ["Leases"]

log = structlog.get_logger(__name__)


class Leases:
    """`async with Leases(...)`: renews and sweeps in the background while open."""

    def __init__(self, *, store: Store, turns: Turns, recovery: Recovery) -> None:
        self._store = store
        self._turns = turns
        self._recovery = recovery
        self._period = turns.lease / 3
        self._nudged = asyncio.Event()
        self._tasks = Supervisor("leases")
        self._loop: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Leases:
        self._turns.on_asked(self._nudged.set)
        self._loop = self._tasks.spawn(self._run(), name="leases")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._turns.on_asked(None)
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        await self._tasks.aclose()

    async def _run(self) -> None:
        next_sweep = time.monotonic() + self._period
        while True:
            raise_if_cancelled()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, next_sweep - time.monotonic())):
                    await self._nudged.wait()
            self._nudged.clear()
            try:
                await self.renew()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self._period
                    await self.sweep()
            except Exception:
                raise_if_cancelled()
                log.exception("leases_failed")

    async def renew(self) -> None:
        """Step 1 of the module doc."""
        turns = self._turns
        started = time.monotonic()
        held = await self._store.renew_leases(turns.owner, lease_until=time.time() + turns.lease)
        turns.renewed(held, read_at=started)

    async def sweep(self) -> None:
        """Step 2 of the module doc."""
        now = time.time()
        for rec in await self._store.turns_in_state(TurnState.RUNNING, lease_ended_before=now):
            try:
                await self._recovery.take_over(rec, expired_before=now)
            except Exception:
                log.exception("take_over_failed", turn_id=rec.turn_id)
        await self._recovery.sweep_parked()
        await self._recovery.start_queues()
        self._turns.count_parked_in_store(await self._store.count_turns(TurnState.PARKED))
