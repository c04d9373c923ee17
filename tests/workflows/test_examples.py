"""The examples of docs/examples/workflows/ load, and run on the demo model from the CLI."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from blitz.server import running_server
from blitz.workflows import load_workflow

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "workflows"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_each_example_loads(path: Path) -> None:
    assert load_workflow(path.name, path.read_bytes()).workflow == path.stem


def test_an_example_has_every_step_type() -> None:
    types = {
        s.type for p in EXAMPLES.glob("*.yaml") for s in load_workflow(p.name, p.read_bytes()).steps
    }
    assert types == {"prompt", "command", "approval", "workflow"}


async def _blitz(target: str, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", *args, "--server", target,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_blitz_run_workflow_shows_each_steps_progress(settings):
    async with running_server(replace(settings, workflows_dir=str(EXAMPLES))) as server:
        code, out, err = await _blitz(
            server.grpc_target, "run", "--workflow", "hello", "-p", "name=Ada", "--approve"
        )
        assert code == 0, err
        assert "[1/2] Greet ✓" in err
        assert "[2/2] Write it down ✓" in err
        assert out == "greeted Ada\n\n"

        code, out, err = await _blitz(
            server.grpc_target, "run", "--workflow", "every-step", "-p", "issue=42",
            "--approve", "--answer", "accept", "--answer", "yes",
        )  # fmt: skip
        assert code == 0, err
        shown = (
            "[1/7] Reproduce ✓",
            "[3/7] Approve the plan ✓",
            "[4/7] Implement ✓",
            "[6/7] Summary ✓",
            "[2/2] Write it down ✓ (hello@1)",
            "[7/7] Thanks ✓",
        )
        for line in shown:
            assert line in err, err
        assert "greeted issue 42" in out

        code, _, err = await _blitz(server.grpc_target, "run", "--workflow", "every-step")
        assert code == 1 and "INVALID_ARGUMENT" in err and "issue" in err


def test_the_documented_schema_is_the_models_own() -> None:
    from blitz.workflows.schema import with_schema

    doc = (EXAMPLES.parents[1] / "workflows.md").read_text()
    assert with_schema(doc) == doc, "run `make docs`"


def test_the_schema_checks_the_examples() -> None:
    """The published schema accepts what the loader accepts (read as it reads YAML)."""
    import json

    import jsonschema
    import yaml

    from blitz.workflows.loading import Yaml12Loader
    from blitz.workflows.schema import schema_text

    schema = json.loads(schema_text())
    for path in EXAMPLES.glob("*.yaml"):
        data = yaml.load(path.read_text(), Loader=Yaml12Loader)  # a SafeLoader
        jsonschema.validate(data, schema)
