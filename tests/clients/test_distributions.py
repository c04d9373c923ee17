"""The two distributions agree: the server's requires the client's at its own version, and
a package both require is pinned the same in both, so neither can install what the other
was not tested with."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def project(pyproject: Path) -> dict[str, Any]:
    table: dict[str, Any] = tomllib.loads(pyproject.read_text())["project"]
    return table


SERVER = project(ROOT / "pyproject.toml")
CLIENT = project(ROOT / "clients" / "pyproject.toml")


def pins(table: dict[str, Any]) -> dict[str, str]:
    """Each required package's specifier, by its normalized name."""
    required = [Requirement(text) for text in table["dependencies"]]
    return {canonicalize_name(r.name): str(r.specifier) for r in required}


def test_the_server_requires_the_client_at_the_same_version():
    assert SERVER["version"] == CLIENT["version"]
    assert pins(SERVER)["blitz-client"] == f"=={CLIENT['version']}"


def test_every_client_dependency_is_pinned_and_pinned_as_the_server_pins_it():
    client, server = pins(CLIENT), pins(SERVER)
    assert [name for name, spec in client.items() if not spec.startswith("==")] == []
    shared = client.keys() & server.keys()
    assert {name: server[name] for name in shared} == {name: client[name] for name in shared}
