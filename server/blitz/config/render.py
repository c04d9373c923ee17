"""The settings shown to people: the README's configuration table, and `blitz config`.

Both are made from the settings table (`table.py`), so neither can drift from the code.
`effective_toml` prints every value with where it came from, secrets masked, as a TOML file
that `--config` reads back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from blitz.config.loading import Resolved
from blitz.config.settings import Settings
from blitz.config.table import SETTINGS, SettingSpec

__all__ = ["effective_toml", "markdown_table"]

_MASK = "***"


def _default(spec: SettingSpec) -> str:
    if spec.default_text:
        return spec.default_text
    value = getattr(Settings(), spec.name)
    if value in ("", (), None) or value == {}:
        return "none"
    return _text(value)


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def markdown_table() -> str:
    """The README's table of settings: flag, variable, default, meaning."""
    rows = ["| flag | variable | default | meaning |", "|---|---|---|---|"]
    for spec in SETTINGS:
        variable = f"`{spec.env}`"
        if spec.fallback_env:
            variable += " (else " + ", ".join(f"`{e}`" for e in spec.fallback_env) + ")"
        rows.append(f"| `{spec.flag}` | {variable} | `{_default(spec)}` | {spec.help} |")
    return "\n".join(rows) + "\n"


def effective_toml(resolved: Resolved) -> str:
    """Every setting's value as TOML, each with its source; secrets masked."""
    lines = []
    for spec in SETTINGS:
        value = getattr(resolved.settings, spec.name)
        if spec.secret and value:
            value = _MASK
        source = resolved.sources[spec.name]
        if value is None:  # TOML has no null: an unset setting is a comment
            lines.append(f"# {spec.name} is unset  # {source}")
        else:
            lines.append(f"{spec.name} = {_toml(value)}  # {source}")
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, tuple):
        value = ",".join(str(part) for part in value)
    if isinstance(value, Mapping):  # an inline table: TOML's strings are JSON's
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)
