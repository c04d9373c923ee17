"""Settings: flags over BLITZ_* variables over defaults, and clear errors."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from blitz.cli import main
from blitz.config import (
    SETTINGS,
    Settings,
    SettingsError,
    effective_toml,
    load_settings,
    resolve,
)


def test_defaults_put_database_and_workspaces_in_the_data_dir() -> None:
    settings = load_settings({}, {})

    assert settings == Settings()
    assert (settings.grpc_host, settings.grpc_port) == ("127.0.0.1", 50051)
    assert (settings.http_host, settings.http_port) == ("127.0.0.1", 8080)
    assert settings.database == str(Path("data") / "blitz.db")
    assert settings.workspace_root == Path("data") / "workspaces"


def test_data_dir_moves_the_derived_paths() -> None:
    settings = load_settings({}, {"BLITZ_DATA_DIR": "/srv/blitz"})

    assert settings.database == "/srv/blitz/blitz.db"
    assert settings.workspace_root == Path("/srv/blitz/workspaces")


def test_a_flag_wins_over_the_environment() -> None:
    settings = load_settings(
        {"grpc_port": "6000", "model": None},
        {"BLITZ_GRPC_PORT": "5000", "BLITZ_MODEL": "openai:gpt-5", "BLITZ_HTTP_PORT": "0"},
    )

    assert settings.grpc_port == 6000
    assert settings.model == "openai:gpt-5"
    assert settings.http_port == 0


def test_values_are_parsed_to_their_types() -> None:
    settings = load_settings(
        {},
        {
            "BLITZ_TURN_TIMEOUT": "10m",
            "BLITZ_APPROVAL_TIMEOUT": "0",
            "BLITZ_OUTPUT_CAP": "1MiB",
            "BLITZ_LOG_FORMAT": "JSON",
            "BLITZ_COMPRESS_STREAMS": "yes",
            "BLITZ_DATABASE": "sqlite:///tmp/x.db",
        },
    )

    assert settings.turn_timeout == 600.0
    assert settings.approval_timeout == 0.0
    assert settings.output_cap == 2**20
    assert settings.log_format == "json"
    assert settings.compress_streams is True
    assert settings.database == "sqlite:///tmp/x.db"


@pytest.mark.parametrize(
    ("flags", "environ", "named"),
    [
        ({}, {"BLITZ_GRPC_PORT": "http"}, "BLITZ_GRPC_PORT"),
        ({"http_port": "70000"}, {}, "--http-port"),
        ({}, {"BLITZ_MAX_TURNS": "0"}, "BLITZ_MAX_TURNS"),
        ({}, {"BLITZ_LOG_LEVEL": "loud"}, "BLITZ_LOG_LEVEL"),
        ({"command_timeout": "0"}, {}, "--command-timeout"),
        ({}, {"BLITZ_OUTPUT_CAP": "lots"}, "BLITZ_OUTPUT_CAP"),
    ],
)
def test_a_bad_value_names_its_flag_or_variable(
    flags: dict[str, str], environ: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        load_settings(flags, environ)


def test_every_setting_has_a_field_and_a_blitz_variable() -> None:
    # config_file is where settings came from, not a setting (`--config`, BLITZ_CONFIG).
    fields = set(Settings.__dataclass_fields__) - {"config_file"}
    assert {spec.name for spec in SETTINGS} == fields
    assert all(spec.env == "BLITZ_" + spec.name.upper() for spec in SETTINGS)


def test_a_toml_file_is_read_below_the_environment_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "blitz.toml"
    path.write_text(
        'grpc_port = 6001\nhttp_port = 6002\nmodel = "openai:gpt-4.1"\ninsecure = true\n'
    )

    resolved = resolve({"grpc_port": "7001"}, {"BLITZ_HTTP_PORT": "7002"}, config=str(path))

    assert (resolved.settings.grpc_port, resolved.settings.http_port) == (7001, 7002)
    assert resolved.settings.model == "openai:gpt-4.1"
    assert resolved.settings.insecure is True
    assert resolved.sources["grpc_port"] == "--grpc-port"
    assert resolved.sources["http_port"] == "BLITZ_HTTP_PORT"
    assert resolved.sources["model"] == f"{path}: model"
    assert resolved.sources["max_turns"] == "default"
    named = load_settings({}, {"BLITZ_CONFIG": str(path)})
    assert named.grpc_port == 6001, "BLITZ_CONFIG names the file when --config does not"


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("grpc_prot = 1\n", "'grpc_prot' is no setting"),
        ("grpc_port = 70000\n", "grpc_port: must be a port number"),
        ("grpc_port = [1]\n", "must be a single value"),
        ("grpc_port = \n", "not valid TOML"),
    ],
)
def test_a_bad_file_is_refused_naming_it_and_the_key(tmp_path: Path, text: str, wrong: str) -> None:
    path = tmp_path / "blitz.toml"
    path.write_text(text)
    with pytest.raises(SettingsError) as refused:
        load_settings({}, {}, config=str(path))
    assert str(path) in str(refused.value) and wrong in str(refused.value)


def test_blitz_config_prints_every_setting_with_its_source_and_masks_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "blitz.toml"
    path.write_text('model = "openai:gpt-4.1"\n')
    for name in [k for k in os.environ if k.startswith("BLITZ_") or k.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-from-the-environment")

    assert main(["config", "--config", str(path), "--grpc-port", "7001"]) == 0
    out = capsys.readouterr().out

    assert "sk-secret" not in out
    assert 'openai_api_key = "***"  # OPENAI_API_KEY' in out
    assert "grpc_port = 7001  # --grpc-port" in out
    assert f'model = "openai:gpt-4.1"  # {path}: model' in out
    assert "max_turns = 50  # default" in out
    assert len(out.splitlines()) == len(SETTINGS)
    reread = tomllib.loads(out.replace('"***"', '""'))
    assert reread["grpc_port"] == 7001 and reread["model"] == "openai:gpt-4.1"


def test_tls_needs_both_files() -> None:
    with pytest.raises(SettingsError, match="--tls-cert and --tls-key"):
        load_settings({"tls_cert": "cert.pem"}, {})


def test_the_metrics_port_is_off_unless_a_port_is_given() -> None:
    assert load_settings({}, {}).metrics_port is None
    assert load_settings({}, {"BLITZ_METRICS_PORT": ""}).metrics_port is None
    assert load_settings({}, {"BLITZ_METRICS_PORT": "9464"}).metrics_port == 9464
    with pytest.raises(SettingsError, match="BLITZ_METRICS_PORT"):
        load_settings({}, {"BLITZ_METRICS_PORT": "metrics"})


def test_the_otlp_endpoint_falls_back_to_the_standard_variable() -> None:
    standard = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}

    assert load_settings({}, {}).otlp_endpoint == ""
    assert load_settings({}, standard).otlp_endpoint == "http://collector:4318"
    ours = {**standard, "BLITZ_OTLP_ENDPOINT": "https://traces.example:4318"}
    assert load_settings({}, ours).otlp_endpoint == "https://traces.example:4318"


def test_every_example_the_settings_table_gives_is_understood():
    """A size the README promises (`--command-memory 8GiB`) once stopped the server."""
    import re

    from blitz.config import SETTINGS

    examples = 0
    for spec in SETTINGS:
        for example in re.findall(r"accepts `([^`]+)`", spec.help):
            spec.parse(example)
            examples += 1
    assert examples >= 5
    sizes = {"8GiB": 8 * 2**30, "64KiB": 64 * 2**10, "2MiB": 2 * 2**20, "1G": 2**30}
    memory = next(spec for spec in SETTINGS if spec.name == "command_memory")
    for text, value in sizes.items():
        assert memory.parse(text) == value


def test_slack_users_are_a_table_that_blitz_config_prints_back() -> None:
    given = '{"U0123ABCD": "alice", "W0456EFGH": ""}'
    resolved = resolve({"slack_users": given}, {})
    assert resolved.settings.slack_users == {"U0123ABCD": "alice", "W0456EFGH": ""}
    assert tomllib.loads(effective_toml(resolved))["slack_users"] == resolved.settings.slack_users
    for wrong in ('["alice"]', '{"alice": "alice"}', '{"U0123ABCD": 1}', "{"):
        with pytest.raises(SettingsError, match="--slack-users"):
            resolve({"slack_users": wrong}, {})
