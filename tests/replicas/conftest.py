"""Fixtures for the replica tests: `blitz serve` processes on one PostgreSQL database.

`replicas("a", "b")` starts them (a fixture of tests/conftest.py, which the container tests
share); `wires` are clients of them, over gRPC for the first and Connect for the second, so
that what crosses from one to the other crosses transports too. Everything is stopped at
the test's end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from support.replicas import Replica
from support.wire import Wire, open_wire


@pytest.fixture
async def wires() -> AsyncIterator[Callable[[Replica, str], Wire]]:
    """A factory of clients: `wires(replica, "grpc" | "connect")`, closed at the end."""
    opened: list[Wire] = []

    def open_one(replica: Replica, kind: str) -> Wire:
        wire = open_wire(kind, replica)  # type: ignore[arg-type]  # has both addresses
        opened.append(wire)
        return wire

    yield open_one
    for wire in opened:
        await wire.close()
