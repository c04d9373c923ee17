"""Podman for the container tests: the engine on a store of the tests' own, and containers.

`PODMAN(...)` runs podman with the store under /var/lib/blitz-tests (`--root`), so the tests
neither see nor touch the machine's other images and containers, and the stand-ins they tag
with the names the Compose files use (support/podman_images.py) shadow nothing. Images stay
in that store between runs, so that a later run reuses them.

`running(image, flags)` starts a container and removes it when the block ends, `volume()`
likewise a named volume; `compose_flags` turns a Compose service's settings into `podman
run` flags, so that a test runs the container as compose.yaml says. Every container and
volume carries the label `blitz-tests=PID`; `sweep()` removes those of test runs that are
gone (killed midway).

`why_unavailable()` says why podman cannot run here, and `skip_or_fail` skips a test with
that reason, or fails it where BLITZ_REQUIRE_PODMAN=1 (CI, .ci/run) says podman must run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import pytest

__all__ = [
    "LABEL",
    "MOST_FILES",
    "MOST_PROCESSES",
    "PODMAN",
    "Container",
    "Endpoints",
    "compose_flags",
    "run_flags",
    "running",
    "skip_or_fail",
    "sweep",
    "unique_name",
    "volume",
    "why_unavailable",
]

# .ci/run sets it: there a podman that cannot run fails the tests instead of skipping them.
REQUIRED = os.environ.get("BLITZ_REQUIRE_PODMAN") == "1"
LABEL = "blitz-tests"
ROOT = Path("/var/lib/blitz-tests/containers")
RUNROOT = Path("/run/blitz-tests/containers")
START_TIMEOUT_S = 120.0
# The most open files and processes a container gets (`run_flags`).
MOST_FILES, MOST_PROCESSES = 20000, 4096
_names = itertools.count(1)


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test for `reason`; fail it instead where podman is required."""
    if REQUIRED:
        pytest.fail(f"BLITZ_REQUIRE_PODMAN=1, but {reason}", pytrace=False)
    pytest.skip(f"podman tests skipped: {reason}")


@cache
def why_unavailable() -> str:
    """Why podman cannot build and run images here; "" when it can (as far as asking it
    tells: support/podman_images.py runs a first container before any test does)."""
    for program in ("podman", "mmdebstrap"):
        if shutil.which(program) is None:
            return f"{program} is not installed (Debian's package of that name)"
    if os.geteuid() != 0:
        return "the podman tests run as root (rootless podman needs subordinate ids)"
    try:
        PODMAN("info", timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return f"`podman info` failed: {_last_line(exc)}"
    return ""


def _last_line(exc: subprocess.SubprocessError) -> str:
    output = getattr(exc, "stderr", None) or getattr(exc, "stdout", None) or ""
    lines = str(output).strip().splitlines()
    return lines[-1] if lines else str(exc)


class _Podman:
    """The podman command, on the tests' own store."""

    @property
    def global_args(self) -> list[str]:
        return ["--root", str(ROOT), "--runroot", str(RUNROOT)]

    def __call__(
        self, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """`podman ARGS`, its output as text; raises CalledProcessError when it fails."""
        return subprocess.run(
            ["podman", *self.global_args, *args],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
            check=check,
        )  # fmt: skip

    def exists(self, kind: str, name: str) -> bool:
        """Whether the image (or volume, container, network) `name` exists."""
        return self(kind, "exists", name, check=False).returncode == 0


PODMAN = _Podman()


def unique_name(purpose: str) -> str:
    """A container's or volume's name that no other test, run or process uses."""
    return f"blitz-tests-{os.getpid()}-{next(_names)}-{purpose}"


def run_flags() -> list[str]:
    """What every container here needs: this process's label, and limits it can be given.

    podman's default limits for a container of root (a million open files) exceed what
    this machine grants, and runc, without CAP_SYS_RESOURCE, cannot raise a limit beyond
    what podman's own processes have: so the host's hard limits, capped at the recipe's
    20000 files and 4096 processes (podman's conmon itself runs with at most 32768).
    """
    limits = []
    for name, which, most in (
        ("nofile", resource.RLIMIT_NOFILE, MOST_FILES),
        ("nproc", resource.RLIMIT_NPROC, MOST_PROCESSES),
    ):
        _, hard = resource.getrlimit(which)
        value = most if hard == resource.RLIM_INFINITY else min(hard, most)
        limits += ["--ulimit", f"{name}={value}:{value}"]
    return ["--label", f"{LABEL}={os.getpid()}", *limits]


def sweep() -> None:
    """Remove the containers, volumes and Compose networks of test runs that are gone."""
    for kind in ("container", "volume"):
        listed = PODMAN(kind, "ls", *(["-a"] if kind == "container" else []), "--format", "json")
        for item in json.loads(listed.stdout or "[]"):
            labels = item.get("Labels") or {}
            owner = labels.get(LABEL) or _compose_owner(labels.get("io.podman.compose.project"))
            if owner and not _alive(int(owner)):
                name = item.get("Names", [item.get("Name")])
                name = name[0] if isinstance(name, list) else name
                PODMAN(kind, "rm", "-f", name, check=False)
    for network in PODMAN("network", "ls", "--format", "{{.Name}}").stdout.split():
        owner = _compose_owner(network.partition("_")[0])
        if owner and not _alive(int(owner)):
            PODMAN("network", "rm", "-f", network, check=False)


def _compose_owner(project: str | None) -> str:
    match = re.fullmatch(r"blitz-tests-(\d+)-.*", project or "")
    return match[1] if match else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Endpoints:
    """Where the host reaches a server in a container: as `support.wire.open_wire` takes it."""

    grpc_target: str
    http_url: str


@dataclass
class Container:
    """A container a test started, by name."""

    name: str

    def logs(self) -> str:
        """Everything it wrote: its stdout, then its stderr (where Blitz logs)."""
        done = PODMAN("logs", self.name, check=False)
        return done.stdout + done.stderr

    def log_lines(self) -> list[dict[str, Any]]:
        """Its JSON log lines (Blitz's logs), in order."""
        return [json.loads(line) for line in self.logs().splitlines() if line.startswith("{")]

    def events(self) -> list[object]:
        return [line.get("event") for line in self.log_lines()]

    def state(self, field: str = "Status") -> str:
        return PODMAN("inspect", "--format", f"{{{{.State.{field}}}}}", self.name).stdout.strip()

    def inspect(self, template: str) -> str:
        return PODMAN("inspect", "--format", template, self.name).stdout.strip()

    def serving(self, starts: int = 1, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
        """The `serving` log line of its `starts`-th start (1: the first), once it is
        written; fails if the container stops first."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.log_lines() if line.get("event") == "serving"]
            if len(lines) >= starts:
                return lines[starts - 1]
            assert self.state() == "running", f"{self.name} exited:\n{self.logs()}"
            assert time.monotonic() < deadline, f"{self.name} did not serve:\n{self.logs()}"
            time.sleep(0.2)

    def exited(self, timeout: float = START_TIMEOUT_S) -> int:
        """Its exit status, once it has exited."""
        done = PODMAN("wait", self.name, timeout=timeout)
        return int(done.stdout.strip().splitlines()[-1])

    def stop(self, timeout: int = 30) -> int:
        """`podman stop -t TIMEOUT`: the image's STOPSIGNAL, SIGKILL after the timeout; the
        exit status."""
        PODMAN("stop", "-t", str(timeout), self.name, timeout=timeout + 60)
        return self.exited()

    def start(self) -> None:
        PODMAN("start", self.name)

    def address(self, port: int) -> str:
        """HOST:PORT on the host that reaches the container's `port`."""
        return PODMAN("port", self.name, f"{port}/tcp").stdout.strip().splitlines()[0]

    def endpoints(self, grpc_port: int = 50051, http_port: int = 8080) -> Endpoints:
        """The published gRPC and HTTP ports of a Blitz server in it (the image's ports)."""
        return Endpoints(self.address(grpc_port), f"http://{self.address(http_port)}")

    def exec(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """`podman exec` as the image's user; does not raise when the command fails."""
        return PODMAN("exec", self.name, *argv, check=False)

    def healthcheck(self) -> int:
        """The image's HEALTHCHECK, run once now (podman runs it on a timer only with
        systemd): 0 healthy, 1 not."""
        return PODMAN("healthcheck", "run", self.name, check=False).returncode


@contextlib.contextmanager
def running(image: str, flags: list[str], command: tuple[str, ...] = ()) -> Iterator[Container]:
    """`podman run -d` of `image` with `flags`; the container is removed when the block ends."""
    container = Container(unique_name("run"))
    try:
        PODMAN("run", "-d", "--name", container.name, *run_flags(), *flags, image, *command)
        yield container
    finally:
        PODMAN("rm", "-f", "-t", "0", container.name, check=False)


@contextlib.contextmanager
def volume() -> Iterator[str]:
    """A named volume of the test's own, by name; removed when the block ends."""
    name = unique_name("data")
    PODMAN("volume", "create", "--label", f"{LABEL}={os.getpid()}", name)
    try:
        yield name
    finally:
        PODMAN("volume", "rm", "-f", name, check=False)


# The keys of a Compose service that `compose_flags` translates, and those it leaves out.
_LEFT_OUT = {
    # The tests run the image they built.
    "build": "",
    "image": "",
    # The image's own HEALTHCHECK, which test_compose.py checks is the same.
    "healthcheck": "",
    # A test's container must stay stopped when it exits or is stopped.
    "restart": "",
}


def compose_flags(
    service: Mapping[str, Any],
    *,
    folder: Path,
    secrets: Mapping[str, Path],
    volumes: Mapping[str, str],
) -> list[str]:
    """`podman run` flags that run a container as Compose would run `service`.

    `folder` is the Compose file's (relative paths are from there); `secrets` are the
    files of the secrets by name; `volumes` name a volume of the test's own for each of
    the file's. Ports are published on the file's default address, on ports podman picks
    (`Container.address`). A key this does not know fails, so that a new one in the file
    is translated here before a test relies on it.
    """
    flags: list[str] = []
    for key, value in service.items():
        if key in _LEFT_OUT:
            continue
        if key == "environment":
            flags += [f"--env={name}={setting}" for name, setting in value.items()]
        elif key == "secrets":
            # Compose mounts a file secret read-only at /run/secrets/NAME.
            flags += [f"--volume={secrets[name]}:/run/secrets/{name}:ro" for name in value]
        elif key == "volumes":
            for mount in value:
                name, _, target = mount.partition(":")
                flags.append(f"--volume={volumes[name]}:{target}")
        elif key == "ports":
            for port in value:
                address, _, target = _interpolated(port).rpartition(":")
                host, _, _ = address.rpartition(":")
                flags.append(f"--publish={host}::{target}")
        elif key == "stop_grace_period":
            flags.append(f"--stop-timeout={_seconds(value)}")
        elif key == "read_only":
            flags += ["--read-only"] if value else []
        elif key == "tmpfs":
            flags += [f"--tmpfs={mount}" for mount in value]
        elif key == "cap_drop":
            flags += [f"--cap-drop={cap}" for cap in value]
        elif key == "pids_limit":
            flags.append(f"--pids-limit={value}")
        elif key == "mem_limit":
            flags.append(f"--memory={value}")
        elif key == "memswap_limit":
            flags.append(f"--memory-swap={value}")
        elif key == "security_opt":
            for option in value:
                name, _, path = option.partition("=")
                if name == "seccomp" and path != "unconfined":
                    option = f"seccomp={(folder / path).resolve()}"
                flags.append(f"--security-opt={option}")
        else:
            raise ValueError(f"the Compose key {key!r} is not translated (support/podman.py)")
    return flags


def _interpolated(text: str) -> str:
    """Compose's `${VAR:-default}` with the default: the tests set no variable."""
    return re.sub(r"\$\{\w+(?::-([^}]*))?\}", lambda m: m[1] or "", text)


def _seconds(duration: str | int) -> int:
    match = re.fullmatch(r"(\d+)(s|m)?", str(duration))
    assert match, f"a duration the tests do not read: {duration!r}"
    return int(match[1]) * (60 if match[2] == "m" else 1)
