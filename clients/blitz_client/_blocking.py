"""The blocking client's machinery: the private event loop that `Blitz` runs `AsyncBlitz`
on, `Stream`, a blocking iterator over one of its async streams, and `BlockingCalls`, the
base of `Blitz`'s parts.

Each `Blitz` owns one loop (`asyncio.Runner`) and every call runs it until the async
call's result is in, so both clients share one implementation of resuming and
deduplication. A loop runs in one thread at a time: a client refuses to be used by any
thread but the one that made it, rather than corrupting its loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Coroutine, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    from blitz_client._async import AsyncBlitz

__all__ = ["BlockingCalls", "Loop", "Stream"]

T = TypeVar("T")


class Loop:
    """The client's private event loop, run by the thread that made the client."""

    def __init__(self) -> None:
        self._runner = asyncio.Runner()
        self._thread = threading.get_ident()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.get_ident() != self._thread:
            coro.close()
            raise RuntimeError(
                "a Blitz client is used only by the thread that made it: make one per thread"
            )
        return self._runner.run(coro)

    def close(self) -> None:
        self._runner.close()


class Stream(Iterator[T]):
    """A blocking view of one of the client's async streams. Close it to stop early."""

    def __init__(self, runner: Loop, source: AsyncGenerator[T, None]) -> None:
        self._runner = runner
        self._source = source
        self._closed = False

    def __next__(self) -> T:
        if self._closed:
            raise StopIteration
        try:
            return self._runner.run(self._next())
        except StopAsyncIteration:
            self._closed = True
            raise StopIteration from None
        except BaseException:
            # A failed or interrupted read leaves the async generator finished.
            self._closed = True
            raise

    async def _next(self) -> T:
        return await anext(self._source)

    def close(self) -> None:
        """Stop the stream and release its connection."""
        if not self._closed:
            self._closed = True
            self._runner.run(self._source.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class BlockingCalls:
    """The base of `Blitz`'s parts: the async client they drive and the loop they drive
    it on, both set by `Blitz.__init__`."""

    _runner: Loop
    _client: AsyncBlitz

    def _stream(self, source: AsyncGenerator[T, None]) -> Stream[T]:
        return Stream(self._runner, source)
