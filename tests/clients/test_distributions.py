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


def test_clients_readme_lists_every_client_command():
    """Docs list every command: each of `blitz`'s client subcommands has a table row."""
    from pathlib import Path

    from blitz_cli.command import build_parser

    readme = (Path(__file__).resolve().parents[2] / "clients" / "README.md").read_text()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "==SUPPRESS==" and a.choices)
    for name in commands.choices:
        if name not in ("serve", "config", "token"):
            assert f"| `blitz {name}" in readme, name
