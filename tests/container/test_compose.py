"""compose.yaml runs the image as the Dockerfile means it: tokens from a secret, a named
volume for /data, both ports on the host's loopback, the same health check, a restart
policy, time enough to drain, and a hardened container (no capability, a read-only root,
bounded processes and memory) whose commands get the box. compose.replicas.yaml runs it
the same way as replicas on one PostgreSQL database and one volume of workspaces, behind a
proxy that publishes the same ports (the proxy itself runs in test_proxy.py).

No Compose runs here, so the files are read and checked against the Dockerfile, each other
and the proxy's configuration.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from support.dockerfile import Dockerfile, DockerIgnore, env_after
from support.proxy import CONFIG

from blitz.config import Settings
from blitz.transport.gate import MAX_REQUEST_BYTES

REPO = Path(__file__).resolve().parents[2]


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / name).read_text())
    return loaded


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load("compose.yaml")


@pytest.fixture(scope="module")
def blitz(compose: dict[str, Any]) -> dict[str, Any]:
    service: dict[str, Any] = compose["services"]["blitz"]
    return service


@pytest.fixture(scope="module")
def replicated() -> dict[str, Any]:
    return load("compose.replicas.yaml")


@pytest.fixture(scope="module")
def replicas(replicated: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The replicated file's Blitz services, by name."""
    services: dict[str, dict[str, Any]] = replicated["services"]
    return {name: service for name, service in services.items() if name.startswith("blitz-")}


# Every Blitz server the files run: (file, service). What holds for one holds for each.
SERVERS = [
    ("compose.yaml", "blitz"),
    ("compose.replicas.yaml", "blitz-a"),
    ("compose.replicas.yaml", "blitz-b"),
]


@pytest.fixture(params=SERVERS, ids=[f"{file}:{service}" for file, service in SERVERS])
def server(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Blitz service, and the whole file it is in."""
    file, name = request.param
    loaded = load(file)
    return loaded, loaded["services"][name]


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's `${VAR:-default}` and `${VAR}`, from `env`."""
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m[1]) or (m[2] or ""), text)


def test_the_service_is_built_from_the_dockerfile_and_restarts(server):
    _, blitz = server
    assert blitz["build"] == "."
    assert blitz["image"] == "blitz"
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


def test_the_health_check_is_the_images(server, dockerfile: Dockerfile):
    _, blitz = server
    healthcheck = dockerfile.final.last("HEALTHCHECK")
    assert blitz["healthcheck"]["test"] == ["CMD", *healthcheck.exec_form()]
    for option in ("interval", "timeout", "start-period", "retries"):
        assert str(blitz["healthcheck"][option.replace("-", "_")]) == healthcheck.flag(option)[0]


def test_tokens_come_from_a_secret_file_that_git_and_the_build_never_see(
    server, dockerignore: DockerIgnore
):
    compose, blitz = server
    env = blitz["environment"]
    assert not {"BLITZ_TOKENS", "BLITZ_INSECURE", "BLITZ_GRPC_HOST", "BLITZ_HTTP_HOST"} & env.keys()
    (secret,) = blitz["secrets"]
    assert env["BLITZ_TOKENS_FILE"] == f"/run/secrets/{secret}"
    file = Path(compose["secrets"][secret]["file"])
    assert file.parts[0] == "secrets"
    assert "/secrets/" in (REPO / ".gitignore").read_text().split()
    assert dockerignore.excludes(file.as_posix())


def test_a_stop_leaves_the_server_time_to_drain(server):
    _, blitz = server
    defaults = Settings()
    longest_drain = defaults.drain_delay + 2 * defaults.drain_timeout
    grace = int(blitz["stop_grace_period"].removesuffix("s"))
    assert grace > longest_drain


def test_the_server_runs_as_the_images_user_without_capabilities_or_new_privileges(
    server, dockerfile: Dockerfile
):
    _, blitz = server
    assert "user" not in blitz, "the image's own unprivileged user"
    assert dockerfile.final.last("USER").args.partition(":")[0] != "0"
    assert blitz["cap_drop"] == ["ALL"] and "cap_add" not in blitz
    assert not blitz.get("privileged")
    assert "no-new-privileges:true" in blitz["security_opt"]


def test_only_the_data_volume_and_a_small_tmp_are_writable(server, dockerfile: Dockerfile):
    _, blitz = server
    assert blitz["read_only"] is True
    (tmpfs,) = blitz["tmpfs"]
    path, _, options = tmpfs.partition(":")
    assert path == "/tmp"
    flags = dict(option.partition("=")[::2] for option in options.split(","))
    assert {"noexec", "nosuid", "nodev"} <= flags.keys() and flags["size"] == "64m"
    (mount,) = blitz["volumes"]
    assert mount.partition(":")[2] == env_after(dockerfile.final, {})["BLITZ_DATA_DIR"]


def test_the_containers_processes_and_memory_are_bounded(server, dockerfile: Dockerfile):
    """A cap on processes above the image's rlimit on its user's (which a fork bomb meets
    first), and memory without swap beyond it: the bounds of every command's tree together."""
    _, blitz = server
    rlimit = int(env_after(dockerfile.final, {})["BLITZ_COMMAND_PROCESSES"])
    assert isinstance(blitz["pids_limit"], int) and blitz["pids_limit"] > rlimit
    assert re.fullmatch(r"\d+g", blitz["mem_limit"])
    assert blitz["memswap_limit"] == blitz["mem_limit"], "no swap beyond the memory limit"


def test_commands_get_the_box_docker_seccomp_json_and_nothing_wider(server):
    """The seccomp profile is the repository's (test_seccomp.py checks what it allows), and
    the only other loosening is the two options the box needs; nothing turns seccomp off."""
    _, blitz = server
    options = blitz["security_opt"]
    (profile,) = [o.partition("=")[2] for o in options if o.startswith("seccomp=")]
    assert profile == "docker/seccomp.json" and (REPO / profile).is_file()
    assert set(options) == {
        "no-new-privileges:true",
        "seccomp=docker/seccomp.json",
        "apparmor=unconfined",
        "systempaths=unconfined",
    }


# The replicated setup


def test_the_replicas_are_one_server_on_one_postgresql_database(replicated, replicas):
    assert len(replicas) >= 2
    first, *others = replicas.values()
    assert all(other == first for other in others), "replicas differ only by name"
    url = urlsplit(first["environment"]["BLITZ_DATABASE"])
    postgres = replicated["services"]["postgres"]
    assert url.scheme == "postgresql" and url.hostname in replicated["services"]
    assert url.hostname == "postgres"
    assert url.username == postgres["environment"]["POSTGRES_USER"]
    assert url.path == "/" + postgres["environment"]["POSTGRES_DB"]
    assert url.password is None, "no password in a URL that `docker inspect` and logs show"
    assert re.fullmatch(r"postgres:\d+", postgres["image"]), "the official image, major pinned"


def test_postgresql_is_healthy_before_a_replica_starts_and_keeps_its_data(replicated, replicas):
    postgres = replicated["services"]["postgres"]
    for replica in replicas.values():
        assert replica["depends_on"]["postgres"] == {"condition": "service_healthy"}
    check = postgres["healthcheck"]["test"]
    assert check[:2] == ["CMD", "pg_isready"]
    options = dict(zip(check[2::2], check[3::2], strict=True))
    # Over TCP: the image's first start runs a throwaway server on its socket only.
    assert options == {
        "-h": "127.0.0.1",
        "-U": postgres["environment"]["POSTGRES_USER"],
        "-d": postgres["environment"]["POSTGRES_DB"],
    }
    (mount,) = postgres["volumes"]
    name, _, target = mount.partition(":")
    assert name in replicated["volumes"] and target == "/var/lib/postgresql/data"
    assert postgres["restart"] == "unless-stopped"


def test_the_database_password_comes_from_one_file_git_and_the_build_never_see(
    replicated, replicas, dockerignore: DockerIgnore
):
    """The same file gives PostgreSQL its password and the replicas theirs (PGPASSWORD, in
    the server's environment, which commands cannot read), never as a file they could."""
    postgres = replicated["services"]["postgres"]
    for service in (postgres, *replicas.values()):
        assert service["env_file"] == "secrets/postgres.env"
    assert dockerignore.excludes("secrets/postgres.env")
    for replica in replicas.values():
        assert replica["secrets"] == ["blitz_tokens"], "no file of the password to read"
        assert not {"PGPASSWORD", "PGPASSFILE"} & replica["environment"].keys()


def test_the_replicas_share_one_volume_of_workspaces_at_one_path(
    replicated, replicas, dockerfile: Dockerfile
):
    data_dir = env_after(dockerfile.final, {})["BLITZ_DATA_DIR"]
    for replica in replicas.values():
        (mount,) = replica["volumes"]
        name, _, target = mount.partition(":")
        assert name in replicated["volumes"], "a named volume, declared, not a host folder"
        # The image's own data folder: a new volume starts out owned by the server's user.
        assert target == data_dir
        root = Path(replica["environment"]["BLITZ_WORKSPACE_ROOT"])
        assert root.is_relative_to(target) and root != Path(target)
    assert len({tuple(r["volumes"]) for r in replicas.values()}) == 1
    assert len({r["environment"]["BLITZ_WORKSPACE_ROOT"] for r in replicas.values()}) == 1


@pytest.mark.parametrize(
    ("env", "address"),
    [({}, "127.0.0.1"), ({"BLITZ_PUBLISH_ADDRESS": "0.0.0.0"}, "0.0.0.0")],
)
def test_the_proxy_publishes_both_ports_on_loopback_unless_told(
    replicated, replicas, dockerfile: Dockerfile, env, address
):
    proxy = replicated["services"]["proxy"]
    published = [interpolate(port, env).split(":") for port in proxy["ports"]]
    exposed = dockerfile.final.last("EXPOSE").args.split()
    assert published == [[address, port, port] for port in exposed]
    assert not [name for name, service in replicas.items() if "ports" in service]


def test_the_proxy_runs_the_repos_config_in_front_of_every_replica(
    replicated, replicas, dockerfile: Dockerfile
):
    proxy = replicated["services"]["proxy"]
    assert re.fullmatch(r"nginx:\d+\.\d+", proxy["image"]), "the official image, pinned"
    (mount,) = proxy["volumes"]
    source, target, mode = mount.split(":")
    assert (REPO / source).resolve() == CONFIG and mode == "ro"
    assert target == "/etc/nginx/conf.d/default.conf", "in place of the image's own server"

    config = CONFIG.read_text()
    exposed = dockerfile.final.last("EXPOSE").args.split()
    servers = re.findall(r"^\s*server\s+([\w.-]+):(\d+)", config, re.M)
    assert sorted(servers) == sorted((name, port) for name in replicas for port in exposed)
    assert re.findall(r"^\s*listen\s+(\d+)", config, re.M) == exposed
    # nginx looks the replicas up as it starts, and again when Compose recreates one.
    assert proxy["depends_on"] == {
        name: {"condition": "service_started", "restart": True} for name in replicas
    }
    assert proxy["restart"] == "unless-stopped"


def test_the_proxy_streams_and_waits_as_long_as_a_turn(dockerfile: Dockerfile):
    """Streamed responses unbuffered, an idle stream kept for as long as a turn may wait
    for an approval, and requests as large as Blitz reads."""
    config = CONFIG.read_text()
    settings = dict(re.findall(r"^\s*(\w+)\s+([^;]*);", config, re.M))
    assert settings["proxy_buffering"] == "off"
    assert settings["proxy_http_version"] == "1.1"
    hour = 3600
    for timeout in ("grpc_read_timeout", "grpc_send_timeout", "proxy_read_timeout"):
        assert settings[timeout] == "1h" and hour >= Settings().turn_timeout, timeout
    assert settings["client_max_body_size"] == "8m"
    assert MAX_REQUEST_BYTES == 8 * 2**20
    assert re.search(r"^\s*listen\s+50051\s+http2;", config, re.M), "h2c for gRPC"
