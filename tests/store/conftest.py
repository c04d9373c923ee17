"""A throwaway PostgreSQL cluster for the store's tests, one per run, a database per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest
from support.postgres import cluster, why_unavailable

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
