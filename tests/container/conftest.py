"""The container's files as the tests read them: the Dockerfile, .dockerignore, the health
probe; and the replicated Compose setup's proxy, run in front of real replicas."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from support import proxy
from support.dockerfile import Dockerfile, DockerIgnore, read_dockerfile
from support.proxy import Proxy
from support.replicas import Replica

from blitz.auth.tokens import token_hash

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def dockerfile() -> Dockerfile:
    return read_dockerfile(REPO / "Dockerfile")


@pytest.fixture(scope="session")
def dockerignore() -> DockerIgnore:
    return DockerIgnore((REPO / ".dockerignore").read_text())


@pytest.fixture(scope="session")
def probe() -> ModuleType:
    """docker/healthcheck.py, the image's health probe, as a module."""
    spec = importlib.util.spec_from_file_location(
        "blitz_healthcheck", REPO / "docker/healthcheck.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def proxied(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Proxy, list[Replica]]]:
    """The replicated Compose setup without Compose: replicas `blitz-a` and `blitz-b` on one
    PostgreSQL database, requiring `proxy.TOKEN`, behind nginx running docker/proxy/blitz.conf.
    """
    if why := proxy.why_unavailable():
        pytest.skip(f"proxy tests skipped: {why}")
    replicas: Callable[..., list[Replica]] = request.getfixturevalue("replicas")
    token = f"--tokens=ops:sha256-{token_hash(proxy.TOKEN)}"
    started = replicas("blitz-a", "blitz-b", extra=[token])
    with proxy.running_proxy({r.name: r for r in started}, tmp_path / "proxy") as running:
        yield running, started
