"""Waiting in tests for something that happens elsewhere: a condition, or a server that is back.

Both poll with a short sleep and a deadline, so a test waits only as long as it must and a
condition that never comes fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from blitz_client import BlitzError

__all__ = ["until_reachable", "wait_until"]

T = TypeVar("T")


async def wait_until(
    condition: Callable[[], object], *, within: float, every: float = 0.05
) -> bool:
    """Poll `condition` every `every` seconds for up to `within`; whether it became true.

    It returns rather than raises, so that the caller's own assertion says what was missing.
    """
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(every)
    return True


async def until_reachable(call: Callable[[], Awaitable[T]], *, within: float = 10.0) -> T:
    """`call()`, made again every 100 ms while it fails `unavailable` (a server restarting).

    A fresh channel may still be backing off from failures during a restart (grpc shares
    one connection per address between channels), and a unary call fails fast meanwhile.
    Any other error is raised at once; still unavailable after `within` seconds fails the test.
    """
    deadline = asyncio.get_running_loop().time() + within
    while True:
        try:
            return await call()
        except BlitzError as exc:
            if exc.code != "unavailable":
                raise
            if asyncio.get_running_loop().time() >= deadline:
                raise AssertionError(f"the server stayed unreachable: {exc!r}") from exc
        await asyncio.sleep(0.1)
