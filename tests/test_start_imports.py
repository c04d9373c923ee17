"""`blitz serve` imports what serving needs, not what only some requests or other commands do.

Imports are most of the server's start (docs/benchmarks.md, "start"). These modules are
imported when first used instead: bashlex by a rule that must parse a command, jsonschema
by a form, the ACP SDK by a server that declares an agent (tests/acp/test_no_agents.py),
each client command's module (the terminal interface, with Markdown's parser) when that
command runs. Checked in a fresh interpreter, since this one has
imported everything already.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from blitz_cli.arguments import add_arguments

_LAZY = (
    "acp",
    "bashlex",
    "jsonschema",
    "blitz_cli.chat",
    "blitz_cli.control",
    "blitz_cli.scriptable",
    "blitz_cli.webhooks",
    "rich.markdown",
    "markdown_it",
)


def _imported_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_server_loads_none_of_the_lazy_modules() -> None:
    loaded = _imported_by("import blitz.cli, blitz.server")
    assert "blitz.server" in loaded
    assert loaded.isdisjoint(_LAZY), sorted(loaded.intersection(_LAZY))


def test_each_lazy_module_comes_in_when_its_user_runs() -> None:
    loaded = _imported_by(
        "from blitz.core.requests.rules import command_parts\n"
        "from blitz.forms import values_problem\n"
        "assert command_parts('echo $(id)') is None\n"
        "form = {'type': 'object', 'properties': {'a': {'type': 'string'}}}\n"
        "assert values_problem(form, {'a': 'x'}) == ('', '')"
    )
    assert {"bashlex", "jsonschema"} <= loaded


def test_every_client_command_names_a_handler_that_exists() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    add_arguments(commands)
    handlers = {name: sub.get_default("client_handler") for name, sub in commands.choices.items()}
    assert {"chat", "sessions", "approve", "deny", "answer", "webhooks"} <= set(handlers)
    for name, handler in handlers.items():
        assert callable(handler.resolve()), name
