"""The container's files as the tests read them: the Dockerfile, .dockerignore, compose.yaml."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from support.dockerfile import Dockerfile, DockerIgnore, read_dockerfile

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
