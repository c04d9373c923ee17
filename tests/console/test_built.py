"""The committed console bundle and TypeScript stubs are what `make console` builds from
console/, clients/typescript/ and proto/, and the README's TypeScript example runs.

`make console` runs in a copy of those folders: `npm ci` from the committed
package-lock.json (from npm's cache when it has the packages, `--prefer-offline`), the
stubs from protoc-gen-es, both packages type-checked, then esbuild. The bundle is
reproducible (pinned packages, no timestamps), so any difference means a source changed
without `make console`. `make run` and `make test` never need Node; where Node, npm or
the packages cannot be had these tests skip, except in CI (`CI` set), where they fail.
"""

from __future__ import annotations

import asyncio
import filecmp
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.readme import block

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = "server/blitz/console"
STUBS = "clients/typescript/src/gen/blitz/v1"
# What `make console` reads; node_modules and dist are made, not copied.
SOURCES = ("proto", "console", "clients/typescript")
FILES = ("Makefile", "package.json", "package-lock.json")


def _unable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the console cannot be rebuilt in CI: {why}")
    pytest.skip(f"console build skipped: {why}")


def _make(tree: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    """The real targets, with this interpreter's venv standing in for `make install`."""
    return subprocess.run(
        [
            "make", "-o", "install", "-o", ".venv/.installed", *targets,
            f"PY={sys.executable}", "NPM=npm --prefer-offline",
        ],
        cwd=tree, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


# npm ci with a cold cache downloads every package: more than the suite's 120 s default.
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the sources with `make console ts-client` run in it."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            _unable(f"no {tool} on PATH")
    tree = tmp_path_factory.mktemp("node") / "tree"
    ignore = shutil.ignore_patterns("node_modules", "dist")
    for source in SOURCES:
        shutil.copytree(ROOT / source, tree / source, ignore=ignore)
    for name in FILES:
        shutil.copy(ROOT / name, tree / name)
    # The stubs and the bundle are made afresh, not carried over.
    shutil.rmtree(tree / "clients/typescript/src/gen")
    (tree / "server/blitz").mkdir(parents=True)
    venv = ROOT / ".venv"
    (tree / ".venv").symlink_to(venv if venv.exists() else Path(sys.prefix))
    installed = _make(tree, "node_modules/.installed")
    if installed.returncode != 0:
        _unable(f"npm ci failed (no registry, and not in npm's cache?): {installed.stderr[-500:]}")
    made = _make(tree, "console", "ts-client")
    assert made.returncode == 0, f"make console failed:\n{made.stdout}\n{made.stderr}"
    yield tree


def _same_files(fresh: Path, committed: Path) -> None:
    names = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert names == sorted(p.name for p in committed.iterdir() if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(fresh, committed, names, shallow=False)
    assert mismatch == [] and errors == [], "run `make console` and commit the result"


def test_the_committed_bundle_is_what_make_console_builds(built: Path) -> None:
    _same_files(built / BUNDLE, ROOT / BUNDLE)


def test_the_typescript_stubs_are_what_protoc_gen_es_makes(built: Path) -> None:
    _same_files(built / STUBS, ROOT / STUBS)


async def test_the_readme_typescript_example_runs_with_node(built: Path, server) -> None:
    code = block("### Talk to it from TypeScript", "js").replace(
        "http://127.0.0.1:8080", server.http_url
    )
    script = built / "hello.mjs"
    script.write_text(code)
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(script),
        cwd=built,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["approving: echo hi", "hi", "[2 model calls]"]
