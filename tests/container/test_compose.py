"""compose.yaml runs the image as the Dockerfile means it: tokens from a secret, a named
volume for /data, both ports on the host's loopback, the same health check, a restart
policy, and time enough to drain.

No Compose runs here, so the file is read and checked against the Dockerfile.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.dockerfile import Dockerfile, DockerIgnore, env_after

from blitz.config import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text())
    return loaded


@pytest.fixture(scope="module")
def blitz(compose: dict[str, Any]) -> dict[str, Any]:
    service: dict[str, Any] = compose["services"]["blitz"]
    return service


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's `${VAR:-default}` and `${VAR}`, from `env`."""
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1]) or (m[2] or ""), text)


def test_the_service_is_built_from_the_dockerfile_and_restarts(blitz):
    assert blitz["build"] == "."
    assert blitz["restart"] == "unless-stopped"


def test_data_lives_on_a_named_volume_at_the_images_data_dir(
    compose, blitz, dockerfile: Dockerfile
):
    (mount,) = blitz["volumes"]
    name, _, target = mount.partition(":")
    assert name in compose["volumes"], "a named volume, declared, not a host folder"
    assert target == env_after(dockerfile.final, {})["BLITZ_DATA_DIR"]


@pytest.mark.parametrize(
    ("env", "address"),
    [({}, "127.0.0.1"), ({"BLITZ_PUBLISH_ADDRESS": "0.0.0.0"}, "0.0.0.0")],
)
def test_both_ports_are_published_on_loopback_unless_told(
    blitz, dockerfile: Dockerfile, env, address
):
    published = [interpolate(port, env).split(":") for port in blitz["ports"]]
    exposed = dockerfile.final.last("EXPOSE").args.split()
    assert published == [[address, port, port] for port in exposed]


def test_the_health_check_is_the_images(blitz, dockerfile: Dockerfile):
    healthcheck = dockerfile.final.last("HEALTHCHECK")
    assert blitz["healthcheck"]["test"] == ["CMD", *healthcheck.exec_form()]
    for option in ("interval", "timeout", "start-period", "retries"):
        assert str(blitz["healthcheck"][option.replace("-", "_")]) == healthcheck.flag(option)[0]


def test_tokens_come_from_a_secret_file_that_git_and_the_build_never_see(
    compose, blitz, dockerignore: DockerIgnore
):
    env = blitz["environment"]
    assert not {"BLITZ_TOKENS", "BLITZ_INSECURE", "BLITZ_GRPC_HOST", "BLITZ_HTTP_HOST"} & env.keys()
    (secret,) = blitz["secrets"]
    assert env["BLITZ_TOKENS_FILE"] == f"/run/secrets/{secret}"
    file = Path(compose["secrets"][secret]["file"])
    assert file.parts[0] == "secrets"
    assert "/secrets/" in (REPO / ".gitignore").read_text().split()
    assert dockerignore.excludes(file.as_posix())


def test_a_stop_leaves_the_server_time_to_drain(blitz):
    defaults = Settings()
    longest_drain = defaults.drain_delay + 2 * defaults.drain_timeout
    grace = int(blitz["stop_grace_period"].removesuffix("s"))
    assert grace > longest_drain
