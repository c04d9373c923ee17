"""Blocking calls off the event loop, bounded in time and in the threads they may hold.

A file call can block where no timeout of ours reaches it: a fifo that slipped past every
check, a network mount that stopped answering. On the event loop it would stall every
session; on an unbounded pool each stuck call would keep a thread for ever, and a default
pool shared with everything else would soon have none left. `Offload.run` runs each call
on a daemon thread, at most `threads` at a time, within its time. A call that overruns it
is abandoned: its caller gets `CallTimedOut` at once, while the thread finishes when it can
and only then takes another call. A call still waiting for a thread when its time is up is
dropped, never run. Daemon threads, so that a stuck one never holds up the exit.

Calls wait in order, and a thread takes the next one as soon as it is free. A burst of
short calls (a thousand turns' checkpoints at once) starts no more than `eager` threads:
more would only take turns at the interpreter, each with its stack and its allocator
arena. A thread whose call has run for `held_up_after` (0.1 s) no longer counts, so slow
or stuck calls get other threads for the calls behind them, up to `threads`. A thread with
nothing to do waits a while for the next call before it ends (starting a thread costs more
than most of the calls).

`FILE_CALLS` is the one bound for workspace file calls, shared by the agent's tools and the
core's workspace views. Nothing here knows what the calls do; it imports nothing of Blitz.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

__all__ = ["FILE_CALLS", "CallTimedOut", "Offload"]

P = ParamSpec("P")
T = TypeVar("T")

# Threads started at once for calls that arrive together, unless told otherwise: the
# machine's cores (two at least).
_EAGER = max(2, os.cpu_count() or 1)
# How long a call runs before its thread counts as held up, and the calls behind it may
# start another (seconds); also how often the waiting calls are looked at meanwhile.
_HELD_UP_AFTER = 0.1
# How long a thread with nothing to do waits for a call before it ends (seconds).
_IDLE_S = 10.0


class CallTimedOut(Exception):
    """A call did not finish, or could not start, within its time; it was abandoned."""


@dataclass(eq=False)
class _Call:
    """A call as a thread runs it: `work` returns how to tell its caller the outcome."""

    work: Callable[[], Callable[[], None]]
    started: bool = False
    abandoned: bool = False


class Offload:
    """Runs blocking calls on at most `threads` daemon threads, each within `timeout` s."""

    def __init__(
        self,
        *,
        threads: int,
        timeout: float,
        name: str = "blitz-offload",
        eager: int | None = None,
        held_up_after: float = _HELD_UP_AFTER,
    ) -> None:
        """`eager`: threads started at once (the machine's cores by default);
        `held_up_after`: seconds a call runs before its thread stops counting."""
        self.timeout = timeout
        self._threads = threads
        self._eager = min(threads, eager or _EAGER)
        self._held_up_after = held_up_after
        self._name = name
        # Everything below is under the condition's lock.
        self._ready = threading.Condition()
        self._calls: deque[_Call] = deque()
        self._live = 0  # threads started and not ended
        self._free = 0  # of those, the ones not running a call
        self._busy: dict[int, float] = {}  # a running call's thread: when the call began
        self._watch: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None

    @property
    def running(self) -> int:
        """Threads running a call now, abandoned calls' stragglers included."""
        with self._ready:
            return len(self._busy)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)` on a worker thread; `CallTimedOut` after `self.timeout` s."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def work() -> Callable[[], None]:
            try:
                result = context.run(fn, *args, **kwargs)
            except BaseException as exc:  # handed to the caller, whatever it is
                outcome: tuple[T | None, BaseException | None] = (None, exc)
            else:
                outcome = (result, None)

            def tell() -> None:
                try:
                    loop.call_soon_threadsafe(_settle, future, outcome)
                except RuntimeError:
                    pass  # the loop is closed: nobody waits for this any more

            return tell

        call = _Call(work)
        self._submit(call, loop)
        try:
            async with asyncio.timeout(self.timeout) as scope:
                return await future
        except TimeoutError:
            if scope.expired():
                if call.started:
                    raise CallTimedOut(f"the call took longer than {self.timeout:g} s") from None
                raise CallTimedOut(
                    f"all {self._threads} worker threads stayed busy for {self.timeout:g} s"
                ) from None
            raise
        finally:
            call.abandoned = True  # nobody waits for it now: if it has not begun, it never will

    def _submit(self, call: _Call, loop: asyncio.AbstractEventLoop) -> None:
        with self._ready:
            self._calls.append(call)
            start = self._wants_thread(len(self._calls))
            if start:
                self._live += 1
                self._free += 1
            else:
                self._ready.notify()
                if len(self._calls) > self._free and self._live < self._threads:
                    self._look_later(loop)  # in case the threads it waits for are held up
        if start:
            self._start()

    def _wants_thread(self, waiting: int) -> bool:
        """Whether `waiting` calls need a new thread now (under the lock)."""
        if waiting <= self._free or self._live >= self._threads:
            return False
        now = time.monotonic()
        held_up = sum(1 for began in self._busy.values() if now - began > self._held_up_after)
        return self._live - held_up < self._eager

    def _look_later(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look at the waiting calls again in a moment, on `loop` (under the lock)."""
        if self._watch is None or self._watch[0] is not loop:  # none yet, or a closed loop's
            self._watch = (loop, loop.call_later(self._held_up_after, self._look, loop))

    def _look(self, loop: asyncio.AbstractEventLoop) -> None:
        """Calls still waiting behind held-up threads get another thread."""
        with self._ready:
            self._watch = None
            waiting = sum(1 for call in self._calls if not call.abandoned)
            start = self._wants_thread(waiting)
            if start:
                self._live += 1
                self._free += 1
            if waiting and self._live < self._threads:
                self._look_later(loop)
        if start:
            self._start()

    def _start(self) -> None:
        try:
            threading.Thread(target=self._serve, name=self._name, daemon=True).start()
        except BaseException:
            with self._ready:
                self._live -= 1
                self._free -= 1
            raise

    def _next(self) -> _Call | None:
        """The first waiting call not abandoned, taken (under the lock)."""
        while self._calls:
            call = self._calls.popleft()
            if not call.abandoned:
                call.started = True
                return call
        return None

    def _serve(self) -> None:
        """A worker thread: the waiting calls one by one, until it has waited `_IDLE_S` for
        none. It counts itself free before its caller is told, so that the caller's next
        call finds it."""
        me = threading.get_ident()
        idle_ended = False
        with self._ready:
            while True:
                call = self._next()
                if call is None:
                    if idle_ended:
                        self._free -= 1
                        self._live -= 1
                        return
                    idle_ended = not self._ready.wait(_IDLE_S)
                    continue
                idle_ended = False
                self._free -= 1
                self._busy[me] = time.monotonic()
                self._ready.release()
                try:
                    tell = call.work()
                finally:
                    self._ready.acquire()
                    del self._busy[me]
                    self._free += 1
                self._ready.release()
                try:
                    tell()
                finally:
                    self._ready.acquire()


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
