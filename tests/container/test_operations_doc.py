"""The container section of docs/operations.md: what can run here does, against the server.

Docker does not run here, but the recipes that make a token and the database's password
do: the token file must be one the server reads, standing for the token it printed, and
the password file one that Compose hands to PostgreSQL and the replicas alike. What the
section says of the files must be what they are.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import yaml

from blitz.agent.sandbox import Isolation
from blitz.auth import parse_tokens
from blitz.auth.tokens import token_hash

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "operations.md").read_text()


def block(after_heading: str, lang: str) -> str:
    """The first fenced block of `lang` after the heading `after_heading`."""
    section = DOC[DOC.index(after_heading) :]
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block after {after_heading!r}"
    return match.group(1)


def test_the_token_recipe_writes_a_file_the_server_reads(tmp_path: Path):
    recipe = block("### Make a token", "sh")
    done = subprocess.run(
        ["/bin/sh", "-ec", recipe], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("blz_")
    file = tmp_path / "secrets" / "blitz_tokens"
    assert file.stat().st_mode & 0o004, "readable by the container's user"
    (entry,) = parse_tokens(file.read_text(), source=str(file))
    assert entry.principal.name == "ops" and entry.principal.admin
    assert entry.hash == token_hash(token)
    assert token not in file.read_text(), "the file holds the hash only"


def test_the_section_names_the_files_as_they_are():
    section = DOC[DOC.index("## Deploying with the container") :]
    compose = (Path(__file__).resolve().parents[2] / "compose.yaml").read_text()
    for name in ("secrets/blitz_tokens", "/run/secrets/blitz_tokens", "blitz-data"):
        assert name in section and name in compose, name
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    for fact in ("python:3.11-slim-trixie", "10001", "blitz-healthcheck", "/usr/bin/tini"):
        assert fact in dockerfile, fact
    for fact in ("python:3.11-slim-trixie", "10001", "blitz-healthcheck", "tini"):
        assert fact in section, fact


def test_the_database_password_recipe_gives_postgresql_and_the_replicas_one_password(
    tmp_path: Path,
):
    recipe = block("### Several replicas with Compose", "sh")
    done = subprocess.run(
        ["/bin/sh", "-ec", recipe], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    file = tmp_path / "secrets" / "postgres.env"
    assert not file.stat().st_mode & 0o077, "Compose reads it; nobody else needs to"
    # As Compose reads an env_file: NAME=VALUE lines.
    env = dict(line.split("=", 1) for line in file.read_text().splitlines())
    assert env.keys() == {"POSTGRES_PASSWORD", "PGPASSWORD"}
    assert env["POSTGRES_PASSWORD"] == env["PGPASSWORD"]
    assert re.fullmatch(r"[0-9a-f]{48}", env["PGPASSWORD"]), "nothing to quote or escape"
    replicated = yaml.safe_load((REPO / "compose.replicas.yaml").read_text())
    assert replicated["services"]["postgres"]["env_file"] == "secrets/postgres.env"


def test_the_replicas_section_names_the_files_and_services_as_they_are():
    section = DOC[DOC.index("### Several replicas with Compose") :]
    section = section[: section.index("\n### ", 1)]
    text = (REPO / "compose.replicas.yaml").read_text()
    replicated = yaml.safe_load(text)
    for name in (*replicated["services"], *replicated["volumes"]):
        assert f"`{name}`" in section, name
    for fact in ("postgres:17", "nginx:1.28", "/data/workspaces", "docker/proxy/blitz.conf"):
        assert fact in section and fact in text, fact
    # The three additions for one more replica are the lines the files have for the others.
    assert "x-replica: &replica" in text and "<<: *replica" in text
    assert "`blitz-c: {<<: *replica}`" in section
    (depends,) = re.findall(r"`blitz-c: (\{condition: [^`]*\})`", section)
    expected = replicated["services"]["proxy"]["depends_on"]["blitz-a"]
    assert yaml.safe_load(depends) == expected
    config = (REPO / "docker/proxy/blitz.conf").read_text()
    servers = re.findall(r"`(server blitz-c:\d+ [^`]*;)`", section)
    assert len(servers) == 2
    for server in servers:
        assert server.replace("blitz-c", "blitz-a") in config, server


def test_the_docker_run_recipe_runs_the_container_as_compose_does():
    """Hardened and boxed alike: each Compose setting has its `docker run` option."""
    words = shlex.split(block("### Run it with `docker run`", "sh").replace("\\\n", " "))
    options: dict[str, list[str]] = {}
    for option, value in zip(words, [*words[1:], ""], strict=True):
        if option.startswith("--"):
            options.setdefault(option, []).append(value)
    blitz = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]["blitz"]
    assert "--read-only" in options and blitz["read_only"] is True
    assert options["--tmpfs"] == blitz["tmpfs"]
    assert options["--cap-drop"] == blitz["cap_drop"] == ["ALL"]
    assert options["--security-opt"] == blitz["security_opt"]
    assert options["--pids-limit"] == [str(blitz["pids_limit"])]
    assert options["--memory"] == [blitz["mem_limit"]]
    assert options["--memory-swap"] == [blitz["memswap_limit"]]


def test_the_confinement_section_names_the_settings_and_the_signs_as_they_are():
    section = DOC[DOC.index("### What confines commands") :]
    section = section[: section.index("\n### ", 1)]
    blitz = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]["blitz"]
    for option in blitz["security_opt"]:
        if option != "no-new-privileges:true":
            assert f"`{option}`" in section, option
    assert f"`pids_limit: {blitz['pids_limit']}`" in section
    assert f"`mem_limit: {blitz['mem_limit']}`" in section
    for mechanism in Isolation:
        assert f"`{mechanism.value}`" in section, mechanism
    server = (REPO / "server" / "blitz" / "server.py").read_text()
    assert '"serving",' in server and "commands=server.commands" in server
    assert "`commands` field" in section and "`command_isolation`" in section
    proto = (REPO / "proto" / "blitz" / "v1" / "session.proto").read_text()
    assert "string command_isolation = " in proto
