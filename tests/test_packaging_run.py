"""What the checkout gives a newcomer: the licence both pyprojects name, in both wheels; and
a `make run` that installs what serving needs and no more, on the ports they choose.

The Makefile is read with `make -n` (what it would run) on a virtual environment of the
test's own (`VENV=`), whose stamp files say which install it has had.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.readme import README

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parents[1]
# The SHA-256 of the Apache License 2.0 as apache.org publishes it (LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
SERVE_INSTALL = "pip install --quiet -e ./clients -e '.'"
DEV_INSTALL = "pip install --quiet -e ./clients -e '.[dev]'"


def test_the_licence_is_the_whole_apache_2_text_at_the_root_and_beside_the_client():
    licence = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(licence).hexdigest() == APACHE_2_SHA256
    assert (ROOT / "clients" / "LICENSE").read_bytes() == licence


@pytest.mark.timeout(600)
def test_both_wheels_carry_the_licence(tmp_path: Path):
    subprocess.run(
        [sys.executable, "-m", "pip", "--quiet", "wheel", "--no-deps", "--wheel-dir", tmp_path,
         ROOT / "clients", ROOT],
        check=True, timeout=300,
    )  # fmt: skip
    wheels = {wheel.name.split("-")[0]: wheel for wheel in tmp_path.glob("*.whl")}
    assert sorted(wheels) == ["blitz_client", "blitz_server"]
    for name, wheel in wheels.items():
        with zipfile.ZipFile(wheel) as archive:
            info = f"{name}-0.1.0.dist-info"
            assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
            metadata = archive.read(f"{info}/METADATA").decode().splitlines()
        assert "License-Expression: Apache-2.0" in metadata, name
        assert "License-File: LICENSE" in metadata, name


def make(venv: Path, *targets: str) -> list[str]:
    """The commands `make TARGETS` would run on `venv`, one a line."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # Not the flags of a `make test` this may run under: its ARGS would be passed down.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    ran = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), f"VENV={venv}", *targets],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return [line.rstrip() for line in ran.stdout.splitlines()]


def stamped(venv: Path, *stamps: str) -> Path:
    """`venv` with these stamp files, newer than both pyprojects."""
    venv.mkdir()
    later = time.time() + 3600
    for stamp in stamps:
        (venv / stamp).touch()
        os.utime(venv / stamp, (later, later))
    return venv


def test_make_run_installs_what_serving_needs_without_the_development_extras(tmp_path: Path):
    commands = make(tmp_path / ".venv", "run")
    assert any(line.endswith(SERVE_INSTALL) for line in commands), commands
    assert not any("[dev]" in line for line in commands), commands
    assert commands[-1] == f"{tmp_path}/.venv/bin/blitz serve"


def test_make_test_after_make_run_installs_the_development_extras(tmp_path: Path):
    commands = make(stamped(tmp_path / ".venv", ".installed-run"), "test")
    assert any(line.endswith(DEV_INSTALL) for line in commands), commands


def test_make_run_after_make_test_installs_nothing_more(tmp_path: Path):
    venv = stamped(tmp_path / ".venv", ".installed", ".installed-run")
    assert make(venv, "run") == [f"{venv}/bin/blitz serve"]


def test_make_run_passes_args_to_blitz_serve_as_the_readme_says(tmp_path: Path):
    venv = stamped(tmp_path / ".venv", ".installed-run")
    flags = "--grpc-port 50061 --http-port 8081"
    assert make(venv, "run", f"ARGS={flags}") == [f"{venv}/bin/blitz serve {flags}"]
    quick_start = README[README.index("## Quick start") : README.index("### Open the console")]
    assert f'make run ARGS="{flags}"' in quick_start
