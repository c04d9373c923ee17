"""Shared fixtures: Blitz on a real SQLite file, and real clients of it.

`wire` is a client of a whole core in this process (see support/in_process.py): most
behaviour tests run that way, fast and without sockets. A test marked `parity` runs the
same calls through both of blitz_client's transports too, against `server`, a real server
on 127.0.0.1 (see support/wire.py and support/servers.py). `settings` are the data
folder's, under the test's own folder. `replicas` starts `blitz serve` processes on one
throwaway PostgreSQL database (support/replicas.py). `channel` and `http` are a stock gRPC
channel and a plain HTTP client of `server`; `fake` is a scripted model provider.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import httpx
import psycopg
import pytest
from support.fake_provider import FakeProvider
from support.in_process import in_process
from support.logging_state import LoggingState
from support.postgres import cluster, why_unavailable
from support.recording_io import RecordingIO
from support.replicas import Replica
from support.servers import make_settings
from support.wire import Wire, open_wire

from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.store import SqliteStore


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """Every test leaves logging as it found it, exactly (support/logging_state.py): a test
    may configure it (`configure_logging`) and put nothing back itself."""
    state = LoggingState.take()
    yield
    state.restore()


@pytest.fixture
def io() -> RecordingIO:
    """A TurnIO that records what the agent emits (support/recording_io.py)."""
    return RecordingIO()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder for one agent."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """A server's settings in the test's folder; on PostgreSQL for tests run on `engine`
    "postgres" (see `pytest_generate_tests`), else on a SQLite file."""
    settings = make_settings(tmp_path / "data")
    if getattr(request, "param", None) == "postgres":
        url: str = request.getfixturevalue("postgres_database")
        settings = replace(settings, database=url)
    return settings


@pytest.fixture
def store_class(settings: Settings) -> type[Any]:
    """The class of the store `settings` open, for a test that slows one of its calls."""
    if "://" in settings.database and not settings.database.startswith("sqlite:"):
        from blitz.store.postgres import PostgresStore

        return PostgresStore
    return SqliteStore


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[RunningServer]:
    async with running_server(settings) as running:
        yield running


@pytest.fixture
async def channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    """A stock gRPC channel to `server`: grpc's defaults, so 4 MiB is the most it receives."""
    async with grpc.aio.insecure_channel(server.grpc_target) as opened:
        yield opened


@pytest.fixture
async def http(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    """A plain HTTP client of `server`'s HTTP port, for what no SDK would send."""
    async with httpx.AsyncClient(base_url=server.http_url) as client:
        yield client


@pytest.fixture
async def fake() -> AsyncIterator[FakeProvider]:
    """A scripted model provider on 127.0.0.1 (support/fake_provider.py)."""
    async with FakeProvider() as provider:
        yield provider


# The folders whose tests start processes of their own (`blitz serve`, a browser, npm, pip,
# a container engine, PostgreSQL replicas): marked `processes`, which `make check` leaves
# to `make test` (tests/README.md). A module elsewhere says so with its own `pytestmark`.
_PROCESS_FOLDERS = frozenset({"browser", "clients", "console", "container", "replicas"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        try:
            folder = item.path.relative_to(tests).parts[0]
        except ValueError:
            continue
        if folder in _PROCESS_FOLDERS:
            item.add_marker(pytest.mark.processes)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`wire` is in process; for a test marked `parity`, also over gRPC and Connect. The
    core's and the session service's tests run on both store engines."""
    if "wire" in metafunc.fixturenames:
        parity = metafunc.definition.get_closest_marker("parity") is not None
        kinds = ["core", "grpc", "connect"] if parity else ["core"]
        metafunc.parametrize("wire", kinds, indirect=True)
    engines = metafunc.definition.get_closest_marker("engines")
    if engines is not None and "settings" in metafunc.fixturenames:
        metafunc.parametrize("settings", engines.args, indirect=True)


@pytest.fixture
async def wire(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[Wire]:
    if request.param == "core":
        async with in_process(settings) as client:
            yield client
        return
    async with running_server(settings) as server:
        client = open_wire(request.param, server)
        try:
            yield client
        finally:
            await client.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Give pyqwest's threads (the Connect client's) a moment to let go before exit.

    A thread of theirs that still drops a connection while the interpreter finalizes
    aborts the process (SIGABRT), which would turn a green run red.
    """
    time.sleep(0.2)


_names = itertools.count()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[str]:
    if why := why_unavailable():
        pytest.skip(f"PostgreSQL tests skipped: {why}")
    with cluster() as url:
        yield url


@pytest.fixture
def postgres_database(postgres_cluster: str) -> Iterator[str]:
    """A fresh, empty database on the cluster; its URL."""
    name = f"blitz_test_{next(_names)}"
    with psycopg.connect(postgres_cluster, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_cluster.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_cluster, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


StartReplicas = Callable[..., list[Replica]]


@pytest.fixture
def replicas(postgres_database: str, tmp_path: Path) -> Iterator[StartReplicas]:
    """A factory: `replicas("a", "b")` starts (or restarts) replicas by name, sharing one
    database and one data folder; `extra` are more `blitz serve` arguments for them."""
    started: dict[str, Replica] = {}
    data = tmp_path / "data"
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(*names: str, extra: Sequence[str] = ()) -> list[Replica]:
        for name in names:
            replica = started.setdefault(
                name, Replica(name, database=postgres_database, data_dir=data, logs=logs)
            )
            replica.start(*extra)
        return [started[name] for name in names]

    yield start
    for replica in started.values():
        replica.close()
