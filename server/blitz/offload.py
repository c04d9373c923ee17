"""Blocking calls off the event loop, bounded in time and in the threads they may hold.

A file call can block where no timeout of ours reaches it: a fifo that slipped past every
check, a network mount that stopped answering. On the event loop it would stall every
session; on an unbounded pool each stuck call would keep a thread for ever, and a default
pool shared with everything else would soon have none left. `Offload.run` runs each call
on a daemon thread of its own, at most `threads` at a time. A call that overruns its time
is abandoned: its caller gets `CallTimedOut` at once, while the thread finishes when it can
and only then gives its slot back. When every slot is held, a caller waits for one only as
long as its own time allows. Daemon threads, so that a stuck one never holds up the exit.
A thread whose call has finished waits a while for the next one before it ends (starting a
thread costs more than most of the calls): only a stuck call keeps a thread of its own.

`FILE_CALLS` is the one bound for workspace file calls, shared by the agent's tools and the
core's workspace views. Nothing here knows what the calls do; it imports nothing of Blitz.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["FILE_CALLS", "CallTimedOut", "Offload"]

P = ParamSpec("P")
T = TypeVar("T")

# How long a caller waits between looks for a free slot, at most (seconds).
_MAX_POLL = 0.05
# How long a thread with nothing to do waits for a call before it ends (seconds).
_IDLE_S = 10.0


# A call as a worker runs it: it returns how to tell its caller the outcome.
_Work = Callable[[], Callable[[], None]]


class CallTimedOut(Exception):
    """A call did not finish, or could not start, within its time; it was abandoned."""


class Offload:
    """Runs blocking calls on at most `threads` daemon threads, each within `timeout` s."""

    def __init__(self, *, threads: int, timeout: float, name: str = "blitz-offload") -> None:
        self.timeout = timeout
        self._slots = threading.BoundedSemaphore(threads)
        self._threads = threads
        self._name = name
        self._lock = threading.Lock()
        self._running = 0
        # Calls handed to idle threads, and how many threads wait for one (under _lock).
        self._calls: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._idle = 0

    @property
    def running(self) -> int:
        """Threads that hold a slot now, finished calls' stragglers included."""
        with self._lock:
            return self._running

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)` on a worker thread; `CallTimedOut` after `self.timeout` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        await self._take_slot(loop, deadline)
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def work() -> Callable[[], None]:
            try:
                result = context.run(fn, *args, **kwargs)
            except BaseException as exc:  # handed to the caller, whatever it is
                outcome: tuple[T | None, BaseException | None] = (None, exc)
            else:
                outcome = (result, None)
            finally:
                self._give_slot()

            def tell() -> None:
                try:
                    loop.call_soon_threadsafe(_settle, future, outcome)
                except RuntimeError:
                    pass  # the loop is closed: nobody waits for this any more

            return tell

        try:
            self._start(work)
        except BaseException:
            self._give_slot()
            raise
        try:
            async with asyncio.timeout_at(deadline) as scope:
                return await future
        except TimeoutError:
            if scope.expired():
                raise CallTimedOut(f"the call took longer than {self.timeout:g} s") from None
            raise

    async def _take_slot(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        # Slots are given back from worker threads, so they cannot wake an asyncio waiter;
        # a short poll, only while every slot is held, is the simple way to wait here.
        delay = 0.001
        while not self._slots.acquire(blocking=False):
            if loop.time() >= deadline:
                raise CallTimedOut(
                    f"all {self._threads} worker threads stayed busy for {self.timeout:g} s"
                )
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(delay * 2, _MAX_POLL)
        with self._lock:
            self._running += 1

    def _start(self, work: _Work) -> None:
        """Hand `work` to an idle thread, or to a new one."""
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._calls.put(work)
                return
        threading.Thread(target=self._serve, args=(work,), name=self._name, daemon=True).start()

    def _serve(self, work: _Work) -> None:
        """A worker thread: `work`, then the calls handed to it while it waits, until it
        has waited `_IDLE_S` for none. It counts itself idle before its caller is told,
        so that the caller's next call finds it."""
        while True:
            tell = work()
            with self._lock:
                self._idle += 1
            tell()
            try:
                work = self._calls.get(timeout=_IDLE_S)
            except queue.Empty:
                with self._lock:
                    try:  # one handed over as the wait ended is still this thread's
                        work = self._calls.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return

    def _give_slot(self) -> None:
        with self._lock:
            self._running -= 1
        self._slots.release()


def _settle(future: asyncio.Future[T], outcome: tuple[T | None, BaseException | None]) -> None:
    if future.done():
        return  # abandoned: timed out or cancelled
    result, error = outcome
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]


# Workspace file calls: reads, writes, listings, searches. A call normally takes
# milliseconds; one that takes this long is stuck, and the tool or the view says so.
FILE_CALLS = Offload(threads=16, timeout=30.0, name="blitz-files")
