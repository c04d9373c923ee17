"""Leases: a process keeps the turns it runs, and takes over those of a process that died.

Only where processes share the store. Two parts:

1. A thread of its own renews the leases of the turns this process holds every third of a
   lease (`--turn-lease`), one statement for all of them, on a connection of its own
   (`Store.lease_renewer`). So a renewal never waits behind the event loop's work: on a
   busy machine the loop may lag by seconds, and leases renewed there ran out under turns
   their live holder was still running, and another replica took them. The answer goes
   to the loop (`Turns.renewed`): a turn missing from it was taken over while this
   process could not renew (it was paused, or cut off from the database), and is stopped
   here without a further write, its events being fenced anyway; a turn someone asked to
   cancel or to take steer text gets it, so a request reaches its turn even if its
   announcement was missed. An announcement (`Turns.on_asked`) makes the renewal come at
   once.
   - When renewals fail (the database cannot be reached) for most of a lease, this
     process stops its running turns itself (`Turns.lapsed`), before another may take
     them over at the lease's end: a client sees them end on the replica that takes them
     over (SERVER_RESTARTED), never run on two.
   - The thread renews only while the event loop answers: a loop that has not run a
     callback for `STALLED_LOOP_LEASES` leases (at least `STALLED_LOOP_MIN` seconds) is
     stuck, not busy, and its turns are left to lapse and be taken over.
2. On the loop, every third of a lease: sweeps. Takes over running turns whose lease ended
   (their holder died), settles parked turns that need someone and starts queues left idle
   (`recovery.py`), and counts the parked turns.

So a turn whose holder died is ended by another process within about a lease and a third.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Callable

import structlog

from blitz.core.driver.recovery import Recovery
from blitz.core.driver.turns import Turns
from blitz.core.supervisor import Supervisor, raise_if_cancelled
from blitz.store import LeaseRenewer, Store, TurnState

__all__ = ["STALLED_LOOP_LEASES", "STALLED_LOOP_MIN", "Leases"]

log = structlog.get_logger(__name__)

# A loop silent for this many leases (and at least this many seconds) is stuck.
STALLED_LOOP_LEASES = 10
STALLED_LOOP_MIN = 20.0
# Renewals failing for this share of a lease: the process stops its turns itself, just
# before another may take them (the fencing of its writes is the guarantee; this spares a
# turn's work being done twice).
_LAPSE_AT = 0.85


class Leases:
    """`async with Leases(...)`: renews (on its thread) and sweeps (on the loop) while
    open."""

    def __init__(self, *, store: Store, turns: Turns, recovery: Recovery) -> None:
        self._store = store
        self._turns = turns
        self._recovery = recovery
        self._period = turns.lease / 3
        self._tasks = Supervisor("leases")
        self._sweeping: asyncio.Task[None] | None = None
        # A renewal gives up in half a period, so that two may fail before the lease ends.
        self._renewer: LeaseRenewer = store.lease_renewer(turns.owner, timeout=self._period / 2)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._keeper: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_seen = time.monotonic()  # when the loop last ran a callback of ours
        self._stalled_after = max(STALLED_LOOP_MIN, STALLED_LOOP_LEASES * turns.lease)

    async def __aenter__(self) -> Leases:
        self._loop = asyncio.get_running_loop()
        self._turns.on_asked(self._wake.set)
        self._keeper = threading.Thread(target=self._keep, name="lease-keeper", daemon=True)
        self._keeper.start()
        self._sweeping = self._tasks.spawn(self._sweep_loop(), name="lease-sweeps")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._turns.on_asked(None)
        self._stop.set()
        self._wake.set()
        if self._keeper is not None:
            await asyncio.to_thread(self._keeper.join)
        self._renewer.close()
        if self._sweeping is not None:
            self._sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeping
        await self._tasks.aclose()

    # The keeper's thread

    def _keep(self) -> None:
        renewed = time.monotonic()  # the start of the last renewal that answered
        while not self._stop.is_set():
            self._wake.wait(self._period)
            self._wake.clear()
            if self._stop.is_set():
                return
            if not self._to_loop(self._seen):
                return  # the loop is closed
            started = time.monotonic()
            if started - self._loop_seen > self._stalled_after:
                log.error("lease_renewal_stopped", loop_silent_s=round(started - self._loop_seen))
                continue  # a stuck loop: its turns lapse, and another process takes them
            try:
                held = self._renewer.renew(time.time() + self._turns.lease)
            except Exception:
                log.warning("lease_renewal_failed", exc_info=True)
                if time.monotonic() - renewed > self._turns.lease * _LAPSE_AT:
                    self._to_loop(self._turns.lapsed)
                continue
            renewed = started
            self._to_loop(functools.partial(self._turns.renewed, held, read_at=started))

    def _to_loop(self, callback: Callable[[], object]) -> bool:
        """Run `callback` on the loop; False once the loop is closed."""
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(callback)
        except RuntimeError:
            return False
        return True

    def _seen(self) -> None:
        self._loop_seen = time.monotonic()

    # The sweeps, on the loop

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self._period)
            try:
                await self.sweep()
            except Exception:
                raise_if_cancelled()
                log.exception("leases_failed")

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
