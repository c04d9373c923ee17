"""The gate every call passes through, shared by both transports: how a shutdown drains.

While serving, the gate admits calls and keeps count: unary calls by number, streams by
the task that serves them. `close()` turns new calls away (UNAVAILABLE, reason
SHUTTING_DOWN); `wait_unary_idle` lets in-flight unary calls finish; `end_streams` then
ends every open stream. A stream is ended by cancelling its task; `stream()` turns that
cancellation into SHUTTING_DOWN, which the transport reports to its client like any other
`BlitzError` (the client resumes elsewhere with `Watch(after_seq)`). A cancellation that
the gate did not cause is never claimed, so it still propagates.

The gate knows no wire format and no business rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from blitz.errors import BlitzError, Reason

__all__ = ["MAX_REQUEST_BYTES", "CallGate", "request_too_large"]

# The largest request either port reads: an uploaded image (5 MiB in the core) and its
# envelope fit; anything larger is refused by the transport before the core sees it.
MAX_REQUEST_BYTES = 8 * 1024 * 1024


def request_too_large() -> BlitzError:
    """What a request past MAX_REQUEST_BYTES gets, on either port."""
    return BlitzError(
        Reason.REQUEST_TOO_LARGE,
        f"the request is larger than this port reads ({MAX_REQUEST_BYTES:,} bytes)",
        {"field": "request", "limit": str(MAX_REQUEST_BYTES)},
    )


def _shutting_down() -> BlitzError:
    """What a client sees of a call refused or a stream ended by a shutdown."""
    return BlitzError(Reason.SHUTTING_DOWN, "the server is shutting down; retry on another replica")


class CallGate:
    """Admits calls while serving; on shutdown, drains them (see the module doc)."""

    def __init__(self) -> None:
        self._serving = True
        self._unary = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._streams: set[asyncio.Task[object]] = set()
        self._ending: set[asyncio.Task[object]] = set()

    @property
    def serving(self) -> bool:
        return self._serving

    @contextmanager
    def unary(self) -> Iterator[None]:
        """Hold the gate open for one unary call; raises SHUTTING_DOWN once closed."""
        if not self._serving:
            raise _shutting_down()
        self._unary += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._unary -= 1
            if self._unary == 0:
                self._idle.set()

    @contextmanager
    def stream(self) -> Iterator[None]:
        """Register the current task as serving one stream; raises SHUTTING_DOWN once closed.

        A stream that `end_streams` ends leaves this block with SHUTTING_DOWN, not with the
        cancellation that ended it.
        """
        if not self._serving:
            raise _shutting_down()
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - transports always run calls in tasks
            yield
            return
        self._streams.add(task)
        try:
            yield
        except asyncio.CancelledError:
            # Claim the cancellation only if the gate alone caused it.
            if task in self._ending and task.uncancel() == 0:
                raise _shutting_down() from None
            raise
        finally:
            self._streams.discard(task)
            self._ending.discard(task)

    def close(self) -> None:
        """Refuse new calls from now on."""
        self._serving = False

    async def wait_unary_idle(self, within: float) -> bool:
        """Wait up to `within` seconds for in-flight unary calls; True if none is left."""
        try:
            async with asyncio.timeout(within):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def end_streams(self) -> int:
        """End every open stream (they report SHUTTING_DOWN); returns how many."""
        ending = self._streams - self._ending
        for task in ending:
            self._ending.add(task)
            task.cancel("blitz: server shutting down")
        return len(ending)
