"""Throwaway PostgreSQL clusters for tests, from the system's `postgresql` package.

`cluster()` makes a fresh cluster in a temporary folder (initdb), starts it on a free port
on 127.0.0.1 with its socket in that folder, and yields its URL; on exit it stops it and
removes it. As root (CI), the server runs as the `postgres` user, since PostgreSQL refuses
to run as root. `available()` says whether this machine can run one at all; tests that
need PostgreSQL are skipped with one line when it cannot.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from support.servers import free_port

__all__ = ["available", "cluster", "why_unavailable"]


@cache
def _bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return versions[-1].parent if versions else None


def why_unavailable() -> str:
    """Why no cluster can be started here; "" when one can."""
    if _bin() is None:
        return "PostgreSQL is not installed (the system's postgresql package)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root, and there is no postgres user to run PostgreSQL as"
    return ""


def available() -> bool:
    return not why_unavailable()


def _run(argv: list[str], *, owner: str | None) -> None:
    if owner is not None:
        argv = ["runuser", "-u", owner, "--", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """A fresh cluster's URL (`postgresql://postgres@127.0.0.1:PORT/postgres`)."""
    bin_dir = _bin()
    assert bin_dir is not None, why_unavailable()
    owner = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="blitz-pg-"))
    data = folder / "data"
    if owner is not None:
        info = pwd.getpwnam(owner)
        os.chown(folder, info.pw_uid, info.pw_gid)
    port = free_port()
    try:
        _run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
             "--no-sync", "-E", "UTF8"],
            owner=owner,
        )  # fmt: skip
        options = (
            f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        _run(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60",
             "-l", str(folder / "log"), "start"],
            owner=owner,
        )  # fmt: skip
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                owner=owner,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
