"""Agents the operator declares in the configuration file, as `[agents.NAME]` tables.

The `agents` setting (`config/table.py`): in the TOML file a table of tables, in a flag or
a variable the same as JSON. Each is one ACP agent a session may be served by
(docs/agents.md): the command that starts it, its environment, what of the network and
the file system its box shows it, how Blitz's modes map to its own. Here the tables' shape
is checked (keys, types, the command an executable file); a table that cannot be served
stops the start, naming it, as a bad webhook declaration does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "ACP_MODEL_PREFIX",
    "BUILTIN_AGENT",
    "MODE_NAMES",
    "DeclaredAgent",
    "acp_agent_of",
    "declared_agents",
]

# The built-in agent's name: always there, the default unless `--default-agent` says.
BUILTIN_AGENT = "blitz"
# A session served by an ACP agent has the model "acp:NAME" (Session.model): the model is
# the operator's, configured for that agent; the store needs no field of its own.
ACP_MODEL_PREFIX = "acp:"
# Blitz's modes (SessionMode) as the `modes` table names them.
MODE_NAMES = ("ask", "accept_edits", "read_only", "plan", "bypass")

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,30}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KEYS = frozenset(
    {
        "display_name",
        "command",
        "args",
        "env",
        "network",
        "binds",
        "home_files",
        "client_fs",
        "client_terminal",
        "modes",
        "start_timeout",
        "silence_timeout",
        "idle_timeout",
    }
)


@dataclass(frozen=True, kw_only=True)
class DeclaredAgent:
    """One `[agents.NAME]` table of the configuration file."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    display_name: str = ""
    # Its environment beside PATH, LANG and HOME; values may hold keys: kept out of repr.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # "none" (the box's own loopback only) or "host" (the host's network whole).
    network: str = "none"
    # Folders shown read-only in its box (its installation, node).
    binds: tuple[str, ...] = ()
    # Files copied into its home at each start: relative path in the home → source file.
    home_files: Mapping[str, str] = field(default_factory=dict)
    client_fs: bool = True
    client_terminal: bool = True
    # Blitz's mode name → the agent's mode id (session/set_mode).
    modes: Mapping[str, str] = field(default_factory=dict)
    start_timeout: float = 30.0
    silence_timeout: float = 600.0
    idle_timeout: float = 600.0

    @property
    def title(self) -> str:
        return self.display_name or self.name


def acp_agent_of(model: str) -> str:
    """The ACP agent's name of a session whose model is `model`; "" for the built-in."""
    return model[len(ACP_MODEL_PREFIX) :] if model.startswith(ACP_MODEL_PREFIX) else ""


def declared_agents(value: object) -> tuple[DeclaredAgent, ...]:
    """The `agents` setting, parsed (from the file's tables or JSON); ValueError naming
    the agent at fault."""
    if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
        raise ValueError("must be a table of agents: [agents.NAME] tables in the file")
    return tuple(_agent(name, table) for name, table in value.items())


def _agent(name: str, table: dict[str, object]) -> DeclaredAgent:
    at = f"agent {name!r}"
    if not _NAME.match(name):
        raise ValueError(f"{at}: a name is 1-31 of a-z, 0-9, - and _, starting alphanumeric")
    if name == BUILTIN_AGENT:
        raise ValueError(f"{at}: {BUILTIN_AGENT!r} is the built-in agent's name")
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(f"{at}: {', '.join(sorted(unknown))} is no key of an agent")
    command = table.get("command")
    if not isinstance(command, str) or not os.path.isabs(command):
        raise ValueError(f"{at}: command must be the agent's executable as an absolute path")
    if not (os.path.isfile(command) and os.access(command, os.X_OK)):
        raise ValueError(f"{at}: {command} is not an executable file")
    timeouts = {key: _seconds(at, key, table.get(key)) for key in _TIMEOUTS if key in table}
    return DeclaredAgent(
        name=name,
        command=command,
        args=_strings(at, "args", table.get("args", [])),
        display_name=_string(at, "display_name", table.get("display_name", "")),
        env=_env(at, table.get("env", {})),
        network=_network(at, table.get("network", "none")),
        binds=_folders(at, _strings(at, "binds", table.get("binds", []))),
        home_files=_home_files(at, table.get("home_files", {})),
        client_fs=_bool(at, "client_fs", table.get("client_fs", True)),
        client_terminal=_bool(at, "client_terminal", table.get("client_terminal", True)),
        modes=_modes(at, table.get("modes", {})),
        **timeouts,
    )


_TIMEOUTS = ("start_timeout", "silence_timeout", "idle_timeout")


def _string(at: str, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{at}: {key} must be a string")
    return value


def _bool(at: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{at}: {key} must be true or false")
    return value


def _strings(at: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{at}: {key} must be a list of strings")
    return tuple(value)


def _table(at: str, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{at}: {key} must be a table of strings")
    return dict(value)


def _seconds(at: str, key: str, value: object) -> float:
    text = str(value).strip()
    number = text.removesuffix("s")
    if text.endswith("m"):
        number, scale = text[:-1], 60.0
    else:
        scale = 1.0
    try:
        seconds = float(number) * scale
    except ValueError:
        raise ValueError(f'{at}: {key} must be seconds ("30s", "10m" or a number)') from None
    if seconds <= 0:
        raise ValueError(f"{at}: {key} must be more than 0")
    return seconds


def _env(at: str, value: object) -> dict[str, str]:
    """The table's environment, `${NAME}` taken from the server's own at start."""
    env = _table(at, "env", value)
    for key, text in env.items():
        missing = [v for v in _VARIABLE.findall(text) if v not in os.environ]
        if missing:
            raise ValueError(f"{at}: env {key} names ${{{missing[0]}}}, which is not set")
        env[key] = _VARIABLE.sub(lambda m: os.environ[m.group(1)], text)
    return env


def _network(at: str, value: object) -> str:
    if value in ("none", "host"):
        return str(value)
    # A list of endpoints forwarded into the box's own loopback is the design
    # (docs/agents.md) and not built yet: refused rather than silently giving none.
    raise ValueError(
        f'{at}: network must be "none" or "host" (a list of endpoints is not served yet)'
    )


def _folders(at: str, binds: tuple[str, ...]) -> tuple[str, ...]:
    for folder in binds:
        if not os.path.isabs(folder) or not os.path.isdir(folder):
            raise ValueError(f"{at}: binds: {folder} is not a folder (an absolute path)")
    return binds


def _home_files(at: str, value: object) -> dict[str, str]:
    files = _table(at, "home_files", value)
    for inside, source in files.items():
        parts = inside.split("/")
        if os.path.isabs(inside) or ".." in parts or not inside:
            raise ValueError(f"{at}: home_files: {inside!r} must be a path inside the home")
        if not os.path.isfile(source):
            raise ValueError(f"{at}: home_files: {source} is not a file")
    return files


def _modes(at: str, value: object) -> dict[str, str]:
    modes = _table(at, "modes", value)
    unknown = set(modes) - set(MODE_NAMES)
    if unknown:
        raise ValueError(
            f"{at}: modes: {', '.join(sorted(unknown))} is no mode of Blitz"
            f" ({', '.join(MODE_NAMES)})"
        )
    return modes
