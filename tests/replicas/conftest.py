"""Fixtures for the replica tests: `blitz serve` processes on one PostgreSQL database.

`replicas("a", "b")` starts them (see support/replicas.py); `wires` are clients of them,
over gRPC for the first and Connect for the second, so that what crosses from one to the
other crosses transports too. Everything is stopped at the test's end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from support.replicas import Replica
from wire import Wire, open_wire

StartReplicas = Callable[..., list[Replica]]


@pytest.fixture
def replicas(postgres_database: str, tmp_path: Path) -> Iterator[StartReplicas]:
    """A factory: `replicas("a", "b")` starts (or restarts) replicas by name."""
    started: dict[str, Replica] = {}
    data = tmp_path / "data"
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(*names: str) -> list[Replica]:
        for name in names:
            replica = started.setdefault(
                name, Replica(name, database=postgres_database, data_dir=data, logs=logs)
            )
            replica.start()
        return [started[name] for name in names]

    yield start
    for replica in started.values():
        replica.close()


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
