"""The images the container tests run, built from Debian's packages: no registry is needed.

- The base: `mmdebstrap` makes a minimal Debian 12 with Python 3.11, the stand-in for the
  Dockerfile's `python:3.11-slim-*` (Debian 13's Python is 3.13), imported into podman with
  the python image's PATH and locale.
- Blitz's image: the repository's Dockerfile, unchanged, built on that base through its own
  `PYTHON_IMAGE` argument, with the host's CA bundle and pip configuration mounted into the
  build so that pip and apt reach the package indexes the way this machine does. It is
  also tagged `blitz`, the name both Compose files give it.
- Stand-ins for `postgres:17` and `nginx:1.28` (compose.replicas.yaml), built on the same
  base with Debian's postgresql and nginx, doing what the Compose file relies on the
  official images for: POSTGRES_* variables, a cluster on the volume, nginx reading
  conf.d in its `http` block. The stand-in nginx also logs which replica served each call.

Each image's tag carries a hash of what it is made of (the recipe; for Blitz's, every file
the Dockerfile copies or mounts), so a run that finds the tag builds nothing, and one
after a change rebuilds just what changed. `images()` does all this once per process; its
`built` says how long each build took (nothing when all were found).
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from support.dockerfile import DockerIgnore, read_dockerfile
from support.podman import PODMAN, run_flags, sweep, why_unavailable

__all__ = ["Images", "Unavailable", "images"]

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1500
# Debian 12: its python3 is the 3.11 of the Dockerfile's default base image.
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates")
# What the python image sets that a bare Debian lacks.
BASE_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["python3"]',
)
# Mounted into every build when the host has them: pip and apt inside the build then trust
# what the host trusts and use the index it is configured for.
HOST_FILES = (Path("/etc/ssl/certs/ca-certificates.crt"), Path("/etc/pip.conf"))


class Unavailable(Exception):
    """podman is there but cannot run a container here."""


@dataclass(frozen=True)
class Images:
    base: str
    blitz: str
    # The Compose file's image names, now naming the stand-ins.
    postgres: str
    nginx: str
    built: dict[str, float] = field(default_factory=dict)


@cache
def images() -> Images:
    """Every image the tests run, built where missing. Raises Unavailable when podman
    cannot run a container; a build that fails fails the test, with its output's end."""
    if why := why_unavailable():
        raise Unavailable(why)
    sweep()
    built: dict[str, float] = {}
    base = _base(built)
    probe = PODMAN("run", "--rm", *run_flags(), base, "true", check=False)
    if probe.returncode != 0:
        lines = (probe.stderr or probe.stdout).strip().splitlines()
        raise Unavailable(f"podman cannot run a container: {lines[-1] if lines else '?'}")
    blitz = _blitz(base, built)
    replicated = yaml.safe_load((REPO / "compose.replicas.yaml").read_text())
    services = replicated["services"]
    standins = _standins(base, built)
    postgres = _tag(standins["postgres"], services["postgres"]["image"])
    nginx = _tag(standins["nginx"], services["proxy"]["image"])
    for file in ("compose.yaml", "compose.replicas.yaml"):
        for service in yaml.safe_load((REPO / file).read_text())["services"].values():
            if "build" in service:
                _tag(blitz, service["image"])
    return Images(base=base, blitz=blitz, postgres=postgres, nginx=nginx, built=built)


def _digest(*parts: str | bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "big") + data)
    return hasher.hexdigest()[:16]


def _timed(built: dict[str, float], what: str, argv: list[str], cwd: Path | None = None) -> None:
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise AssertionError(f"{what}: {shlex.join(argv)} failed ({done.returncode}):\n{tail}")
    built[what] = round(time.monotonic() - start, 1)


def _base(built: dict[str, float]) -> str:
    recipe = ["--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", BASE_SUITE]
    tag = f"localhost/blitz-tests-base:{_digest(*recipe, *BASE_CHANGES)}"
    if PODMAN.exists("image", tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="blitz-tests-base-", dir="/var/tmp") as folder:
        tar = Path(folder) / "base.tar"
        _timed(built, "base (mmdebstrap)", ["mmdebstrap", "--quiet", *recipe, str(tar)])
        changes = [arg for change in BASE_CHANGES for arg in ("--change", change)]
        _timed(built, "base (import)", _podman("import", *changes, str(tar), tag))
    _prune("localhost/blitz-tests-base", tag)
    return tag


def _podman(*args: str) -> list[str]:
    return ["podman", *PODMAN.global_args, *args]


def _build(*args: str) -> list[str]:
    """`podman build` as the host's network and trust allow, keeping HEALTHCHECK (which
    only the docker format has)."""
    mounts = [f"--volume={path}:{path}:ro" for path in HOST_FILES if path.is_file()]
    return _podman("build", "--format=docker", "--network=host", *mounts, *args)


def _context_files() -> list[Path]:
    """The Dockerfile, .dockerignore and every file that the Dockerfile copies or mounts
    from the build context (as .dockerignore lets it)."""
    dockerfile = read_dockerfile(REPO / "Dockerfile")
    ignore = DockerIgnore((REPO / ".dockerignore").read_text())
    sources: list[str] = []
    for stage in dockerfile.stages:
        for instruction in stage.instructions:
            assert instruction.keyword != "ADD", "ADD: say here what it brings in"
            if instruction.keyword == "COPY" and not instruction.flag("from"):
                sources += shlex.split(instruction.args)[:-1]
            for mount in instruction.flag("mount"):
                options = dict(part.split("=", 1) for part in mount.split(","))
                if options["type"] == "bind" and "from" not in options:
                    sources.append(options["source"])
    files = {REPO / "Dockerfile", REPO / ".dockerignore"}
    for source in sources:
        path = REPO / source
        for found in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if found.is_file() and not ignore.excludes(found.relative_to(REPO).as_posix()):
                files.add(found)
    return sorted(files)


def _blitz(base: str, built: dict[str, float]) -> str:
    parts: list[str | bytes] = [base]
    for path in _context_files():
        parts += [path.relative_to(REPO).as_posix(), path.read_bytes()]
    tag = f"localhost/blitz-tests:{_digest(*parts)}"
    if not PODMAN.exists("image", tag):
        _timed(
            built, "blitz", _build(f"--build-arg=PYTHON_IMAGE={base}", f"--tag={tag}", "."), REPO
        )
        _prune("localhost/blitz-tests", tag)
    return tag


# The stand-ins' common layer: both servers from Debian's packages. Debian's postgresql
# would make a cluster of its own at install; the entrypoint makes one where the official
# image does, so the package is told not to.
SERVICES = """\
FROM {base}
RUN mkdir -p /etc/postgresql-common/createcluster.d \\
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/tests.conf \\
    && apt-get update \\
    && apt-get install -y --no-install-recommends postgresql nginx-light \\
    && rm -rf /var/lib/apt/lists/*
"""

POSTGRES = """\
FROM {services}
COPY postgres-entrypoint /usr/local/bin/docker-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]
"""

# The official image's contract, as compose.replicas.yaml uses it: on an empty volume, a
# cluster whose superuser is POSTGRES_USER with POSTGRES_PASSWORD, a database
# POSTGRES_DB, password logins from the network; then the server as `postgres`. UTF-8, as
# the official image's locale makes it (a SQL_ASCII database hands psycopg bytes).
POSTGRES_ENTRYPOINT = """\
#!/bin/sh
set -eu
PATH="$(echo /usr/lib/postgresql/*/bin):$PATH"
export PATH
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /run/postgresql
    chown postgres:postgres "$PGDATA" /run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password=$(mktemp)
    printf '%s\\n' "$POSTGRES_PASSWORD" > "$password"
    initdb -D "$PGDATA" --encoding=UTF8 --locale=C.UTF-8 -U "${POSTGRES_USER:-postgres}" \\
        --pwfile="$password" --auth-local=trust --auth-host=scram-sha-256
    rm -f "$password"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "CREATE DATABASE \\"${POSTGRES_DB:-${POSTGRES_USER:-postgres}}\\";" \\
        | postgres --single -D "$PGDATA" postgres
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
"""

NGINX = """\
FROM {services}
RUN rm -f /etc/nginx/sites-enabled/default
COPY upstreams.conf /etc/nginx/conf.d/00-upstreams.conf
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
"""

# On stdout (`podman logs`): the port a call came in on, its status, and the replicas
# tried, the last of which answered.
NGINX_UPSTREAMS = """\
log_format upstreams '$server_port $status $upstream_addr';
access_log /dev/stdout upstreams;
"""


def _standins(base: str, built: dict[str, float]) -> dict[str, str]:
    """The stand-in images by role ("postgres", "nginx"), each under a tag of its own."""
    services = f"localhost/blitz-tests-services:{_digest(base, SERVICES)}"
    files = {"postgres-entrypoint": POSTGRES_ENTRYPOINT, "upstreams.conf": NGINX_UPSTREAMS}
    recipes = {"postgres": POSTGRES, "nginx": NGINX}
    tags = {
        role: f"localhost/blitz-tests-{role}:{_digest(services, recipe, *files.values())}"
        for role, recipe in recipes.items()
    }
    if all(PODMAN.exists("image", tag) for tag in tags.values()):
        return tags
    with tempfile.TemporaryDirectory(prefix="blitz-tests-standins-") as folder:
        context = Path(folder)
        for name, text in files.items():
            (context / name).write_text(text)
            (context / name).chmod(0o755)
        for role, recipe in {"services": SERVICES, **recipes}.items():
            (context / f"{role}.Containerfile").write_text(
                recipe.format(base=base, services=services)
            )
        if not PODMAN.exists("image", services):
            _timed(
                built,
                "stand-ins (packages)",
                _build("--file=services.Containerfile", f"--tag={services}", "."),
                context,
            )
        for role, tag in tags.items():
            _timed(
                built,
                f"stand-in {role}",
                _build(f"--file={role}.Containerfile", f"--tag={tag}", "."),
                context,
            )
    for role in ("services", *recipes):
        keep = services if role == "services" else tags[role]
        _prune(f"localhost/blitz-tests-{role}", keep)
    return tags


def _tag(image: str, name: str) -> str:
    """`image` also tagged `name` (as a Compose file names it), in the local namespace."""
    local = name if "/" in name.split(":")[0] else f"localhost/{name}"
    if ":" not in local.rsplit("/", 1)[-1]:
        local += ":latest"
    PODMAN("tag", image, local)
    return local


def _prune(repository: str, keep: str) -> None:
    """Untag the repository's other images (older builds), then drop what no tag holds."""
    listed = PODMAN("images", "--format", "{{.Repository}}:{{.Tag}}", repository)
    for tag in listed.stdout.split():
        if tag != keep:
            PODMAN("rmi", tag, check=False)
    PODMAN("image", "prune", "-f", check=False)
