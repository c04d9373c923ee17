"""A Compose file run by podman-compose (from PyPI) on the tests' podman store.

`compose_project` copies the file and docker/ (the seccomp profile, the proxy's
configuration: what the file mounts) into the test's folder beside the secrets the test
writes, so that nothing is written into the repository, and runs `podman-compose up -d`
there with the images support/podman_images.py built (`--no-build`). The project has a name
of its own (`blitz-tests-PID-N`), and publishes its ports on a loopback address of its own
(BLITZ_PUBLISH_ADDRESS, 127.39.x.y), so that neither clashes with anything else that runs
here; `down -v` removes it all when the block ends.

podman runs health checks on a timer only under systemd, and podman-compose cannot wait
for `condition: service_healthy` with podman 4.3: it starts every service at once, and
`Container.healthcheck` runs a check on demand.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from support.podman import PODMAN, Container, run_flags, unique_name

__all__ = ["Project", "compose_project", "why_unavailable"]

REPO = Path(__file__).resolve().parents[2]


def why_unavailable() -> str:
    """Why podman-compose cannot run here; "" when it can."""
    if importlib.util.find_spec("podman_compose") is None:
        return "podman-compose is not installed (the dev extras: `make install`)"
    return ""


@dataclass(frozen=True)
class Project:
    name: str
    folder: Path
    file: str
    # Where the published ports are: BLITZ_PUBLISH_ADDRESS.
    address: str

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`podman-compose ARGS` on this project; raises CalledProcessError when it fails."""
        argv = [
            sys.executable, "-m", "podman_compose",
            f"--podman-args={shlex.join(PODMAN.global_args)}",
            f"--podman-run-args={shlex.join(run_flags())}",
            f"--project-name={self.name}", f"--file={self.file}", *args,
        ]  # fmt: skip
        env = {**os.environ, "BLITZ_PUBLISH_ADDRESS": self.address}
        return subprocess.run(
            argv, cwd=self.folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=timeout, check=True,
        )  # fmt: skip

    def container(self, service: str) -> Container:
        """The service's (first) container, as podman-compose names it."""
        return Container(f"{self.name}_{service}_1")


def _address() -> str:
    """A loopback address of this process's own: all of 127.0.0.0/8 is the loopback."""
    pid = os.getpid()
    return f"127.39.{pid // 256 % 256}.{pid % 256}"


@contextlib.contextmanager
def compose_project(file: str, folder: Path, *, secrets: Mapping[str, str]) -> Iterator[Project]:
    """`file` of the repository up in `folder`, with `secrets` (file name under secrets/:
    its text) beside it; down, volumes and all, when the block ends."""
    shutil.copy(REPO / file, folder / file)
    shutil.copytree(REPO / "docker", folder / "docker")
    (folder / "secrets").mkdir()
    for name, text in secrets.items():
        (folder / "secrets" / name).write_text(text)
        # As the docs say: readable by the container's user.
        (folder / "secrets" / name).chmod(0o644)
    project = Project(unique_name("compose"), folder, file, _address())
    try:
        project.compose("up", "--detach", "--no-build")
        yield project
    finally:
        project.compose("down", "--volumes")
