"""blitz-client installs alone and works alone.

Its wheel, built from clients/ as a user would build it, goes into a fresh virtual
environment with its dependencies from the package index (through this machine's pip
configuration and cache). Nothing of the server comes with it, and from there the
README's two Python examples (blitz_client, and grpcio on the `blitz.v1` stubs) and the
`blitz` command work against a real server, which runs from the project's own
environment on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.readme import block

# Building a wheel and a virtual environment takes tens of seconds; a loaded CI machine
# may take several times that.
pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 300
# What the server needs and a client must not drag along.
SERVER_MODULES = ("pydantic_ai", "psycopg", "uvicorn", "anthropic", "openai", "blitz.server")


@dataclass
class Alone:
    """The fresh environment with blitz-client alone: its interpreter and its `blitz`."""

    python: Path
    blitz: Path
    home: Path

    def run(self, *argv: str | Path) -> subprocess.CompletedProcess[str]:
        """A command of that environment, from a folder of its own and without ours."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("BLITZ_") and key not in {"VIRTUAL_ENV", "PYTHONPATH"}
        }
        return subprocess.run(
            [str(arg) for arg in argv],
            cwd=self.home, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> Alone:
    root = tmp_path_factory.mktemp("client-alone")
    pip = [sys.executable, "-m", "pip", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", root / "wheels", ROOT / "clients"],
        check=True, timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    (wheel,) = (root / "wheels").glob("*.whl")
    assert wheel.name == "blitz_client-0.1.0-py3-none-any.whl"
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", python, "install", wheel], check=True, timeout=STEP_TIMEOUT_S)
    (root / "home").mkdir()
    return Alone(python=python, blitz=venv / "bin" / "blitz", home=root / "home")


def requirements(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    return {canonicalize_name(Requirement(text).name) for text in project["dependencies"]}


def test_the_client_alone_brings_none_of_the_servers_dependencies(alone: Alone):
    found = alone.run(
        alone.python, "-c",
        "import importlib.util, json, sys\n"
        "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in sys.argv[1:]}))",
        *SERVER_MODULES, "blitz_client", "blitz_cli", "blitz.v1.session_pb2_grpc",
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {
        **{module: False for module in SERVER_MODULES},
        "blitz_client": True,
        "blitz_cli": True,
        "blitz.v1.session_pb2_grpc": True,
    }

    listed = alone.run(
        alone.python, "-c",
        "from importlib.metadata import distributions\n"
        "for d in distributions(): print(d.metadata['Name'])",
    )  # fmt: skip
    installed = {canonicalize_name(name) for name in listed.stdout.split()}
    client = requirements(ROOT / "clients/pyproject.toml")
    server_only = requirements(ROOT / "pyproject.toml") - client - {"blitz-client"}
    # opentelemetry-api is pyqwest's own requirement (connectrpc's HTTP client), not the
    # server's coming along.
    assert installed & server_only <= {"opentelemetry-api"}
    assert "blitz-server" not in installed


def test_the_readme_python_examples_run_with_the_client_alone(alone: Alone, server_process):
    sdk = block("### Chat with it in the terminal", "python")
    assert sdk.startswith("from blitz_client import Blitz\n")
    ran = alone.run(alone.python, "-c", sdk.replace("127.0.0.1:50051", server_process.grpc_target))
    assert ran.returncode == 0, ran.stderr
    assert "$ echo hi -> exit 0" in ran.stdout

    grpcio = block("### Talk to it from Python", "python")
    assert grpcio.startswith("import grpc\nfrom blitz.v1 import")
    ran = alone.run(
        alone.python, "-c", grpcio.replace("127.0.0.1:50051", server_process.grpc_target)
    )
    assert ran.returncode == 0, ran.stderr
    assert "You said: Hello, agent!" in ran.stdout
    assert "[1 model calls so far]" in ran.stdout


def test_the_blitz_command_alone_runs_turns_and_says_where_the_server_is(
    alone: Alone, server_process
):
    ran = alone.run(
        alone.blitz, "run", "hello from the client alone", "--server", server_process.grpc_target
    )
    assert ran.returncode == 0, ran.stderr
    assert "You said: hello from the client alone" in ran.stdout

    helped = alone.run(alone.blitz, "--help")
    assert helped.returncode == 0
    assert re.search(r"serve +run the server \(needs blitz-server\)", helped.stdout)
    for argv in (["serve"], ["serve", "--grpc-port", "0"], ["config"], ["token", "create", "ops"]):
        refused = alone.run(alone.blitz, *argv)
        assert refused.returncode == 2, argv
        assert refused.stderr == (
            f"blitz {argv[0]}: the server is not installed here; install blitz-server to use it\n"
        )
        assert refused.stdout == ""
