#!/usr/bin/env python3
"""The image's lock: every runtime dependency of both distributions, pinned, with hashes.

`make lock` writes docker/requirements.lock with it, and tests/container/test_lock.py runs
it again to check that the lock checked in is what the pyproject files give. The Dockerfile
installs the lock with `--require-hashes --only-binary=:all:`, then the two project wheels
with `--no-deps`: every file that reaches the image is one whose hash is written here, and
nothing is built from source.

The resolver is uv (`uv pip compile`, pinned in the dev extra), not pip-tools' pip-compile.
pip-compile resolves for the interpreter that runs it: it can lock for CPython 3.11 on
x86_64 Linux only when run there, and never for aarch64 from an x86_64 machine. uv resolves
for the platform named on its command line, refuses a package without a wheel for it
(`--only-binary`), writes the hash of every file of a release (so one lock serves both
architectures, which this checks resolve alike), and runs offline from its cache.

The lock is resolved from scratch, never from the lock before it (uv would carry that one's
hashes over unchecked), against the index as it was at the moment written in its header
(`--exclude-newer`): resolving again later gives the same file, while `make lock` takes the
newest releases that the pins allow. It must never write a lock that only one of the
image's platforms can install.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["LOCK", "PLATFORMS", "LockError", "generate", "resolved_at"]

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "docker" / "requirements.lock"
# The image's: python:3.11-slim-trixie (glibc 2.41) on either architecture.
PYTHON = "3.11"
PLATFORMS = ("x86_64-manylinux_2_40", "aarch64-manylinux_2_40")
# Both distributions, by their folders: uv reads their requirements from the pyprojects.
# They are the image's own wheels, not the index's, so they are left out of the lock.
SOURCES = ("./clients", ".")
OWN = ("blitz-client", "blitz-server")
_STAMP = "# Resolved against the index as it was at "
_HEADER = """\
# Every runtime dependency of the image: the pins of blitz-server and blitz-client and all
# that they pull in, for CPython 3.11 on Linux x86_64 and aarch64, each with the hashes of
# its release's files. The Dockerfile installs it with --require-hashes.
# Written by `make lock` (docker/lock.py, with uv pip compile): do not edit it by hand.
"""
# uv's slowest case: a cold cache on a slow link.
_TIMEOUT_S = 300


class LockError(Exception):
    """The dependencies did not resolve (uv's message), or resolved apart by platform."""


def generate(*, at: str, offline: bool = False) -> str:
    """The lock's text, resolved against the index as it was at `at` (RFC 3339);
    `offline`: from uv's cache alone (LockError when it lacks something)."""
    resolved = {platform: _compile(platform, at=at, offline=offline) for platform in PLATFORMS}
    first, *others = resolved.values()
    if any(other != first for other in others):
        raise LockError(f"the dependencies resolve differently on {', '.join(PLATFORMS)}")
    return f"{_HEADER}{_STAMP}{at}\n{first}"


def resolved_at(lock: str) -> str:
    """The moment a lock was resolved at, from its header."""
    match = re.search(rf"^{re.escape(_STAMP)}(\S+)$", lock, re.M)
    if match is None:
        raise LockError("the lock's header does not say when it was resolved")
    return match[1]


def _compile(platform: str, *, at: str, offline: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="blitz-lock-") as folder:
        output = Path(folder) / "requirements.lock"
        argv = [
            sys.executable, "-m", "uv", "pip", "compile", "-",
            # Nothing from a uv.toml of this machine's: the same lock everywhere.
            "--no-config", "--quiet", "--no-header",
            "--generate-hashes", "--only-binary", ":all:",
            "--python-version", PYTHON, "--python-platform", platform,
            "--exclude-newer", at,
            *(f"--no-emit-package={name}" for name in OWN),
            *(["--offline"] if offline else []),
            "--output-file", str(output),
        ]  # fmt: skip
        done = subprocess.run(
            argv, input="".join(f"{source}\n" for source in SOURCES), cwd=ROOT,
            capture_output=True, text=True, check=False, timeout=_TIMEOUT_S,
        )  # fmt: skip
        if done.returncode != 0:
            raise LockError(done.stderr.strip() or f"uv pip compile exited {done.returncode}")
        return output.read_text()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write the image's lock (make lock).")
    parser.add_argument("--output", type=Path, default=LOCK, help="default: %(default)s")
    args = parser.parse_args(argv)
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    try:
        text = generate(at=now.isoformat().replace("+00:00", "Z"))
    except LockError as exc:
        print(f"make lock: {exc}", file=sys.stderr)
        return 1
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
