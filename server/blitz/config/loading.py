"""Reading the settings once: flags over `BLITZ_*` variables over a TOML file over defaults.

`resolve` says where each value came from, for `blitz config`; `load_settings` is what the
entry point calls. The TOML file (`--config PATH` or `BLITZ_CONFIG`) holds settings by
name (`grpc_port = 50051`); a key no setting has is an error, so a typo is not ignored. A
structured setting (`webhooks`) is a TOML array of tables there, and JSON text in a flag or
a variable.
Nothing else in the code reads the environment.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blitz.config.hidden import refused_bind
from blitz.config.settings import Settings
from blitz.config.table import SETTINGS, SettingSpec

__all__ = ["CONFIG_ENV", "Resolved", "SettingsError", "load_settings", "resolve"]

# Where the TOML file is named when no `--config` flag is given.
CONFIG_ENV = "BLITZ_CONFIG"


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the flag, variable or file at fault."""


@dataclass(frozen=True)
class Resolved:
    """The settings, and where each value came from: `--flag`, a variable, the file, or
    "default"."""

    settings: Settings
    sources: Mapping[str, str]


def resolve(
    flags: Mapping[str, object | None],
    environ: Mapping[str, str],
    *,
    config: str | None = None,
) -> Resolved:
    """The settings from parsed flags (None: not given), the environment, and a TOML file.

    `config` names the file (else `BLITZ_CONFIG` does; else there is none). Flag values may
    be strings (parsed like the environment) or already typed values. Raises
    `SettingsError` naming the flag, variable or file at fault.
    """
    path = config or environ.get(CONFIG_ENV) or ""
    from_file = _read_file(path) if path else {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in SETTINGS:
        raw, source = _raw(spec, flags, environ, from_file, path)
        if raw is None:
            sources[spec.name] = "default"
            continue
        try:
            values[spec.name] = spec.parse(raw) if isinstance(raw, str) else raw
        except ValueError as exc:
            shown = "(hidden)" if spec.secret else repr(raw)
            raise SettingsError(f"{source}: {exc}, got {shown}") from None
        sources[spec.name] = source

    values["data_dir"] = data_dir = Path(values.get("data_dir", Settings.data_dir)).expanduser()
    values.setdefault("database", str(data_dir / "blitz.db"))
    values["workspace_root"] = Path(
        values.get("workspace_root", data_dir / "workspaces")
    ).expanduser()
    values["repo_dir"] = Path(values.get("repo_dir", data_dir / "repos")).expanduser()
    if bool(values.get("tls_cert")) != bool(values.get("tls_key")):
        raise SettingsError("--tls-cert and --tls-key: give both, or neither")
    settings = Settings(**values, config_file=os.path.abspath(path) if path else "")
    if why := refused_bind(settings):
        raise SettingsError(f"{sources['command_binds']}: {why}")
    return Resolved(settings, sources)


def load_settings(
    flags: Mapping[str, object | None], environ: Mapping[str, str], *, config: str | None = None
) -> Settings:
    """The settings (see `resolve`)."""
    return resolve(flags, environ, config=config).settings


def _raw(
    spec: SettingSpec,
    flags: Mapping[str, object | None],
    environ: Mapping[str, str],
    from_file: Mapping[str, object],
    path: str,
) -> tuple[object | None, str]:
    """A setting's raw value and where it came from, by precedence; (None, "") if unset."""
    if flags.get(spec.name) is not None:
        value = flags[spec.name]
        if spec.repeatable and isinstance(value, list):
            # A flag given several times (argparse's "append"): as if comma-separated.
            return ",".join(str(part) for part in value), spec.flag
        return value, spec.flag
    for env in (spec.env, *spec.fallback_env):
        if env in environ:
            return environ[env], env
    if spec.name in from_file:
        value = from_file[spec.name]
        # TOML types are checked as their text would be: a port is still a port.
        if isinstance(value, dict | list):
            return json.dumps(value), f"{path}: {spec.name}"  # structured: as JSON
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return text, f"{path}: {spec.name}"
    return None, ""


def _read_file(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None
    known = {spec.name: spec for spec in SETTINGS}
    for key, value in data.items():
        if key not in known:
            raise SettingsError(f"{path}: {key!r} is no setting (see `blitz serve --help`)")
        if isinstance(value, dict | list) and not known[key].structured:
            raise SettingsError(f"{path}: {key} must be a single value")
    return data
