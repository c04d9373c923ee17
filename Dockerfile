# syntax=docker/dockerfile:1
# Blitz in a container: `docker build -t blitz .`, then see docs/operations.md,
# "Deploying with the container". tests/container runs this file's wheel build, install
# and start steps (and hadolint) in `make test`: change them here and the tests follow.

# Debian 13 ("trixie"), the current stable: its security updates reach a rebuild. Pin a
# digest here (python:3.11-slim-trixie@sha256:…) for byte-for-byte rebuilds.
ARG PYTHON_IMAGE=python:3.11-slim-trixie

# Stage 1: the project's two wheels, the server's (pyproject.toml) and the client's that it
# requires (clients/pyproject.toml: the stubs, the SDK and the `blitz` command), built by
# pinned tools (pip here, hatchling from each build-system) from the files the wheels are
# made of and nothing else.
FROM ${PYTHON_IMAGE} AS builder
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY server/ server/
COPY clients/ clients/
RUN --mount=type=cache,target=/root/.cache/pip \
    python -m venv /build \
    && /build/bin/python -m pip install pip==26.3 \
    && /build/bin/python -m pip wheel --no-deps --wheel-dir /wheels . ./clients

# Stage 2: the server. No compiler, no build tools, no sources: the wheels and their pinned
# dependencies in a virtual environment of their own (/opt/blitz, owned by root, compiled
# at install), so that neither the server's user nor the agent's commands can change the
# server's code.
FROM ${PYTHON_IMAGE} AS runtime

# What the image carries besides Python:
# - tini, the init process (PID 1). It hands SIGTERM to the server, which drains (see
#   STOPSIGNAL), and it reaps orphans: the agent's commands can leave processes behind
#   (`setsid`, a daemon that double-forks), and without an init each would stay a zombie
#   of PID 1 for the container's life. It is baked in rather than left to `docker run
#   --init` because nothing reminds an operator to add that flag, and Kubernetes has none.
# - For the commands the agent runs (with /bin/sh, in the session's workspace, with a
#   plain PATH that leaves /opt/blitz out): the slim image's sh (dash), bash, coreutils,
#   findutils, grep, sed, tar, gzip and python3 (the base interpreter, without the
#   server's packages), and git, since a coding agent's first commands are `git status`,
#   `git diff` and `git log` in a checked-out project. No curl, ssh or compilers: add
#   them in an image of your own `FROM` this one when your agent needs them.
# ca-certificates is already in the base image (model providers over HTTPS).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git tini \
    && rm -rf /var/lib/apt/lists/*

# An unprivileged user with a fixed uid/gid, so that a bind-mounted /data can be given to
# it (chown 10001:10001) and Kubernetes' runAsNonRoot can check it. /data is its only
# writable place: the database and every workspace live there.
RUN groupadd --system --gid 10001 blitz \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin blitz \
    && install -d -o 10001 -g 10001 -m 0750 /data

# The builder's pinned pip installs into a virtual environment that has no pip of its own:
# nothing in it is there unless Blitz needs it. First the dependencies, from the lock
# (docker/requirements.lock, `make lock`): every one pinned, every file checked against its
# hash, none built from source, and none missing (in hash-checking mode pip refuses a
# dependency that the lock lacks). Then the two wheels alone (--no-deps), so that no index
# is ever asked for a package named blitz-client; `pip check` proves that the lock meets
# their requirements.
RUN --mount=type=bind,from=builder,source=/build,target=/build \
    --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,source=docker/requirements.lock,target=/tmp/requirements.lock \
    --mount=type=cache,target=/root/.cache/pip \
    python -m venv --without-pip /opt/blitz \
    && /build/bin/python -m pip --python /opt/blitz/bin/python install \
        --require-hashes --only-binary=:all: -r /tmp/requirements.lock \
    && /build/bin/python -m pip --python /opt/blitz/bin/python install --no-deps /wheels/*.whl \
    && /build/bin/python -m pip --python /opt/blitz/bin/python check

# The HEALTHCHECK's probe: stdlib only, it follows BLITZ_HTTP_PORT, BLITZ_TLS_CERT and
# BLITZ_CONFIG the way the server does.
COPY --chmod=0755 docker/healthcheck.py /usr/local/bin/blitz-healthcheck

# Listen on every interface of the container, so that published ports reach the server.
# That makes tokens mandatory: the server refuses to start without one (BLITZ_TOKENS,
# BLITZ_TOKENS_FILE or `blitz token create`); nothing here turns that off. The container's
# user runs nothing but the server and its commands, so a cap on its processes guards
# against a fork bomb without starving anything else (docs/security.md, "Commands").
ENV PATH=/opt/blitz/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    BLITZ_GRPC_HOST=0.0.0.0 \
    BLITZ_GRPC_PORT=50051 \
    BLITZ_HTTP_HOST=0.0.0.0 \
    BLITZ_HTTP_PORT=8080 \
    BLITZ_DATA_DIR=/data \
    BLITZ_LOG_FORMAT=json \
    BLITZ_COMMAND_PROCESSES=512

USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# gRPC, then Connect / gRPC-Web / probes.
EXPOSE 50051 8080

# The server drains on SIGTERM (docs/operations.md, "Stopping and restarting"). The drain
# can take up to drain_delay + 2 x drain_timeout (20 s by default): give `docker stop` a
# longer timeout than that (-t 30; compose.yaml's stop_grace_period).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["blitz-healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["blitz", "serve"]
