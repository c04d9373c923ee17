"""docker/seccomp.json is Docker's default seccomp profile plus what bubblewrap's box needs,
and under it the box works where Docker's default leaves commands to Landlock.

No Docker runs here, so the filters are applied as Docker applies them: the rules that hold
for a container without capabilities (compose.yaml drops them all) on this machine's
architecture are loaded with libseccomp into a process of an unprivileged user, with
no_new_privs (support/seccomp.py). That process then probes each mechanism as the server
does when it starts (`blitz.agent.sandbox.available`), on this machine's kernel.

What this cannot show is the rest of a container: AppArmor, the masked paths of /proc, and
the host's policy on user namespaces. docs/operations.md says what the box needs of each.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import seccomp

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "docker" / "seccomp.json"
# moby/profiles seccomp/v0.2.3, default.json (what Docker Engine applies when told nothing),
# as the SHA-256 of its canonical JSON (sorted keys, no spaces).
DOCKER_DEFAULT_SHA256 = "9da637d2ab0a204fcbd91bd88f1be9e004a3acab61c571a9f5b8870e588a17d2"
# What the box's rules allow beyond Docker's default, and no more.
BOX_SYSCALLS = {"clone", "unshare", "mount", "umount2", "pivot_root", "sethostname"}
CLONE_NEWUSER = 0x10000000
NOBODY = 65534
_PROBE = (
    "import json; from blitz.agent.sandbox import Isolation, available;"
    " print(json.dumps({m.value: available(m) for m in (Isolation.BOX, Isolation.LANDLOCK)}))"
)


def canonical(profile: dict[str, Any]) -> str:
    return json.dumps(profile, sort_keys=True, separators=(",", ":"))


def blitz_rules(profile: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in profile["syscalls"] if r.get("comment", "").startswith("Blitz:")]


@pytest.fixture(scope="module")
def profile() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(PROFILE.read_text())
    return loaded


@pytest.fixture(scope="module")
def docker_default(tmp_path_factory: pytest.TempPathFactory, profile: dict[str, Any]) -> Path:
    """Docker's own default profile: docker/seccomp.json without Blitz's rules."""
    default = {
        **profile,
        "syscalls": [r for r in profile["syscalls"] if r not in blitz_rules(profile)],
    }
    path = tmp_path_factory.mktemp("seccomp") / "default.json"
    path.write_text(json.dumps(default))
    return path


def _as_unprivileged() -> list[str]:
    """The argv prefix that runs a command as an unprivileged user without capabilities."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@functools.cache
def _why_not_here() -> str:
    if why := seccomp.libseccomp_missing():
        return why
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "no setpriv to drop to an unprivileged user"
    try:
        unfiltered = probe(None)
    except AssertionError:
        return "the test's interpreter is not reachable by an unprivileged user"
    if not unfiltered["landlock"]:
        return "no Landlock on this kernel, even unfiltered"
    return ""


def probe(profile: Path | None) -> dict[str, bool]:
    """Which mechanisms work for an unprivileged process under `profile` (None: no filter)."""
    filtered = [sys.executable, seccomp.__file__, "-", "--"] if profile else []
    done = subprocess.run(
        [*_as_unprivileged(), *filtered, sys.executable, "-c", _PROBE],
        input=profile.read_text() if profile else "",
        capture_output=True, text=True, cwd="/", timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.fixture
def here() -> None:
    if why := _why_not_here():
        pytest.skip(f"seccomp probes skipped: {why}")


def test_the_profile_is_dockers_default_with_only_the_boxs_rules_added(profile):
    default = {
        **profile,
        "syscalls": [r for r in profile["syscalls"] if r not in blitz_rules(profile)],
    }
    assert hashlib.sha256(canonical(default).encode()).hexdigest() == DOCKER_DEFAULT_SHA256
    added = blitz_rules(profile)
    assert {name for rule in added for name in rule["names"]} == BOX_SYSCALLS
    for rule in added:
        assert rule["action"] == "SCMP_ACT_ALLOW"
        assert rule["excludes"]["caps"] == ["CAP_SYS_ADMIN"], "Docker's own rule covers it"
    (namespaces,) = [r for r in added if "clone" in r["names"]]
    assert set(namespaces["names"]) == {"clone", "unshare"}
    # New namespaces only with a new user namespace: never the container's own.
    assert namespaces["args"] == [
        {"index": 0, "value": CLONE_NEWUSER, "valueTwo": CLONE_NEWUSER, "op": "SCMP_CMP_MASKED_EQ"}
    ]


def test_under_dockers_default_profile_the_box_is_refused_and_landlock_confines(
    here, docker_default: Path
):
    assert probe(docker_default) == {"box": False, "landlock": True}


def test_under_the_profile_the_box_works(here):
    if not probe(None)["box"]:
        pytest.skip("this kernel refuses unprivileged user namespaces even unfiltered")
    assert probe(PROFILE) == {"box": True, "landlock": True}


def test_the_profile_lets_no_namespace_be_made_without_a_user_namespace(here):
    """What Docker's default refuses on its own stays refused: `unshare -n` alone."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) here")
    done = subprocess.run(
        [*_as_unprivileged(), sys.executable, seccomp.__file__, "-", "--",
         unshare, "--net", "true"],
        input=PROFILE.read_text(), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "Operation not permitted" in done.stderr
