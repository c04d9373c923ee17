"""`blitz serve` imports what serving needs, not what only some requests or other commands do.

Imports are most of the server's start (docs/benchmarks.md, "start"). These modules are
imported when first used instead: bashlex by a rule that must parse a command, jsonschema
by a form, the terminal interface by `blitz chat`. Checked in a fresh interpreter, since
this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

_LAZY = ("bashlex", "jsonschema", "blitz_cli.chat")


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
        "from blitz.core.rules import command_parts\n"
        "from blitz.forms import values_problem\n"
        "assert command_parts('echo $(id)') is None\n"
        "form = {'type': 'object', 'properties': {'a': {'type': 'string'}}}\n"
        "assert values_problem(form, {'a': 'x'}) == ('', '')\n"
        "import blitz_cli.arguments"
    )
    assert {"bashlex", "jsonschema"} <= loaded
