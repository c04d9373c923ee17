"""The server's settings: one typed, frozen object read once at the entry point.

Every setting comes from a command-line flag or a `BLITZ_*` environment variable (the flag
wins) or else its default; `SETTINGS` below is the one table of them, from which the CLI
builds its flags and the README its table. `load_settings` is called by the entry point
only: nothing deeper in the code may read `os.environ`; it receives `Settings` (or the
single values it needs) as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from blitz import setting_values as values

__all__ = ["SETTINGS", "SettingSpec", "Settings", "SettingsError", "load_settings"]

LogFormat = Literal["auto", "console", "json"]
LogLevel = Literal["debug", "info", "warning", "error"]


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the flag or variable."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything `blitz serve` needs to know, already validated."""

    grpc_host: str = "127.0.0.1"
    grpc_port: int = 50051
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    data_dir: Path = Path("data")
    # A path to the SQLite file or a database URL; empty in the table: `<data_dir>/blitz.db`.
    database: str = "data/blitz.db"
    workspace_root: Path = Path("data/workspaces")
    model: str = "demo"
    max_turns: int = 50
    # Seconds; 0 means no deadline.
    turn_timeout: float = 3600.0
    # Seconds; 0 means an approval waits until the turn's deadline.
    approval_timeout: float = 0.0
    command_timeout: float = 120.0
    # Bytes of command output kept for the model and the client.
    output_cap: int = 64 * 1024
    log_format: LogFormat = "auto"
    log_level: LogLevel = "info"
    # Seconds a shutdown waits for in-flight calls and running turns.
    drain_timeout: float = 10.0
    # Seconds a shutdown keeps the ports open, refusing calls and failing health checks,
    # before it closes them: time for a load balancer to notice and stop routing here.
    drain_delay: float = 0.0
    # Whether streamed messages may be gzip-compressed on the Connect port (see
    # blitz.transport.connect: connectrpc compresses every message, however small).
    compress_streams: bool = False
    # Model providers. Keys are secrets: kept out of repr (and so out of logs).
    openai_api_key: str = field(default="", repr=False)
    # For `openai:` models; empty: OpenAI's own API.
    openai_base_url: str = ""
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    # The server behind `openai-compatible:NAME` models (vLLM, Ollama, llama.cpp, LM Studio).
    base_url: str = ""
    compatible_api_key: str = field(default="", repr=False)
    # Whether the OpenAI-compatible server's models accept images.
    compatible_images: bool = True
    # Tokens assumed for a model whose context window is unknown; 0: never trim for it.
    context_window: int = 0
    # Tries after a rate limit, a 5xx or a broken stream, and the first backoff in seconds.
    model_retries: int = 3
    retry_delay: float = 1.0
    # Whether fetch_url may reach loopback, private and link-local addresses.
    fetch_allow_local: bool = False
    fetch_max_bytes: int = 2 * 2**20
    # A JSON file of MCP servers; empty: none.
    mcp_config: str = ""
    # The Prometheus metrics port; None: no metrics listener.
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    # An OTLP/HTTP collector's base URL to send traces to; empty: no tracing.
    otlp_endpoint: str = ""


@dataclass(frozen=True)
class SettingSpec:
    """One setting: its field, flag, environment variable, parser and help text."""

    name: str
    env: str
    parse: Callable[[str], Any]
    help: str
    metavar: str = ""
    choices: tuple[str, ...] = field(default=())
    # Conventional variables read when the BLITZ_* one is unset (OPENAI_API_KEY, say).
    fallback_env: tuple[str, ...] = field(default=())
    # A secret: never echoed in an error message.
    secret: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _choice(name: str, env: str, choices: tuple[str, ...], help: str) -> SettingSpec:
    """A setting that takes one of `choices` (case-insensitive from the environment)."""

    def parse(text: str) -> str:
        lowered = text.strip().lower()
        if lowered not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return lowered

    return SettingSpec(name, env, parse, help, choices=choices)


# The one table of settings: the CLI's flags, the environment and the README come from it.
SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("grpc_host", "BLITZ_GRPC_HOST", values.nonempty, "gRPC listen address", "HOST"),
    SettingSpec(
        "grpc_port", "BLITZ_GRPC_PORT", values.port, "gRPC port (0: any free port)", "PORT"
    ),
    SettingSpec(
        "http_host",
        "BLITZ_HTTP_HOST",
        values.nonempty,
        "Connect / gRPC-Web / health listen address",
        "HOST",
    ),
    SettingSpec(
        "http_port",
        "BLITZ_HTTP_PORT",
        values.port,
        "Connect / gRPC-Web / health port (0: any free port)",
        "PORT",
    ),
    SettingSpec(
        "data_dir",
        "BLITZ_DATA_DIR",
        values.nonempty,
        "folder of the database and the workspaces",
        "DIR",
    ),
    SettingSpec(
        "database",
        "BLITZ_DATABASE",
        values.nonempty,
        "SQLite file or database URL (default: <data-dir>/blitz.db)",
        "PATH_OR_URL",
    ),
    SettingSpec(
        "workspace_root",
        "BLITZ_WORKSPACE_ROOT",
        values.nonempty,
        "folder holding the sessions' workspaces (default: <data-dir>/workspaces)",
        "DIR",
    ),
    SettingSpec("model", "BLITZ_MODEL", values.nonempty, "default model of new sessions", "MODEL"),
    SettingSpec(
        "max_turns",
        "BLITZ_MAX_TURNS",
        values.positive_int,
        "default limit of model calls per turn",
        "N",
    ),
    SettingSpec(
        "turn_timeout",
        "BLITZ_TURN_TIMEOUT",
        values.seconds,
        "default wall-clock limit of a turn in seconds (0: none)",
        "SECONDS",
    ),
    SettingSpec(
        "approval_timeout",
        "BLITZ_APPROVAL_TIMEOUT",
        values.seconds,
        "seconds an approval or question waits before it is denied (0: until the turn's deadline)",
        "SECONDS",
    ),
    SettingSpec(
        "command_timeout",
        "BLITZ_COMMAND_TIMEOUT",
        values.positive_seconds,
        "limit of one command run by the agent, in seconds",
        "SECONDS",
    ),
    SettingSpec(
        "output_cap",
        "BLITZ_OUTPUT_CAP",
        values.bytes_,
        "bytes of a command's output kept (e.g. 64KiB)",
        "BYTES",
    ),
    _choice(
        "log_format",
        "BLITZ_LOG_FORMAT",
        get_args(LogFormat),
        "log format (auto: console on a terminal, JSON otherwise)",
    ),
    _choice("log_level", "BLITZ_LOG_LEVEL", get_args(LogLevel), "lowest level logged"),
    SettingSpec(
        "drain_timeout",
        "BLITZ_DRAIN_TIMEOUT",
        values.seconds,
        "seconds a shutdown waits for in-flight calls and running turns",
        "SECONDS",
    ),
    SettingSpec(
        "drain_delay",
        "BLITZ_DRAIN_DELAY",
        values.seconds,
        "seconds a shutdown keeps the ports open, failing health checks, before closing them",
        "SECONDS",
    ),
    SettingSpec(
        "compress_streams",
        "BLITZ_COMPRESS_STREAMS",
        values.bool_,
        "gzip streamed messages on the Connect port when the client accepts it",
        "BOOL",
    ),
    SettingSpec(
        "openai_api_key",
        "BLITZ_OPENAI_API_KEY",
        values.stripped,
        "API key for openai: models (else OPENAI_API_KEY)",
        "KEY",
        fallback_env=("OPENAI_API_KEY",),
        secret=True,
    ),
    SettingSpec(
        "openai_base_url",
        "BLITZ_OPENAI_BASE_URL",
        values.url,
        "base URL for openai: models, e.g. a proxy (default: OpenAI's API)",
        "URL",
    ),
    SettingSpec(
        "anthropic_api_key",
        "BLITZ_ANTHROPIC_API_KEY",
        values.stripped,
        "API key for anthropic: models (else ANTHROPIC_API_KEY)",
        "KEY",
        fallback_env=("ANTHROPIC_API_KEY",),
        secret=True,
    ),
    SettingSpec(
        "anthropic_base_url",
        "BLITZ_ANTHROPIC_BASE_URL",
        values.url,
        "base URL for anthropic: models (default: Anthropic's API)",
        "URL",
    ),
    SettingSpec(
        "base_url",
        "BLITZ_BASE_URL",
        values.url,
        "the OpenAI-compatible server of openai-compatible:NAME models (vLLM, Ollama, ...)",
        "URL",
    ),
    SettingSpec(
        "compatible_api_key",
        "BLITZ_COMPATIBLE_API_KEY",
        values.stripped,
        "API key for the OpenAI-compatible server, if it needs one",
        "KEY",
        secret=True,
    ),
    SettingSpec(
        "compatible_images",
        "BLITZ_COMPATIBLE_IMAGES",
        values.bool_,
        "whether the OpenAI-compatible server's models accept images",
        "BOOL",
    ),
    SettingSpec(
        "context_window",
        "BLITZ_CONTEXT_WINDOW",
        values.non_negative_int,
        "tokens assumed for a model whose context window is unknown (0: no trimming)",
        "TOKENS",
    ),
    SettingSpec(
        "model_retries",
        "BLITZ_MODEL_RETRIES",
        values.non_negative_int,
        "retries of a model call after a rate limit, a 5xx or a broken stream",
        "N",
    ),
    SettingSpec(
        "retry_delay",
        "BLITZ_RETRY_DELAY",
        values.seconds,
        "first backoff before a model call is retried, doubling each time",
        "SECONDS",
    ),
    SettingSpec(
        "fetch_allow_local",
        "BLITZ_FETCH_ALLOW_LOCAL",
        values.bool_,
        "let fetch_url reach loopback, private and link-local addresses",
        "BOOL",
    ),
    SettingSpec(
        "fetch_max_bytes",
        "BLITZ_FETCH_MAX_BYTES",
        values.bytes_,
        "largest response fetch_url downloads (e.g. 2MiB)",
        "BYTES",
    ),
    SettingSpec(
        "mcp_config",
        "BLITZ_MCP_CONFIG",
        values.stripped,
        "JSON file of MCP servers whose tools the agent may use",
        "PATH",
    ),
    SettingSpec(
        "metrics_host", "BLITZ_METRICS_HOST", values.nonempty, "metrics listen address", "HOST"
    ),
    SettingSpec(
        "metrics_port",
        "BLITZ_METRICS_PORT",
        values.optional_port,
        "Prometheus metrics port (unset: no metrics port; 0: any free port)",
        "PORT",
    ),
    SettingSpec(
        "otlp_endpoint",
        "BLITZ_OTLP_ENDPOINT",
        values.url,
        "OTLP/HTTP collector to send traces to (else OTEL_EXPORTER_OTLP_ENDPOINT; unset: none)",
        "URL",
        fallback_env=("OTEL_EXPORTER_OTLP_ENDPOINT",),
    ),
)


def load_settings(flags: Mapping[str, object | None], environ: Mapping[str, str]) -> Settings:
    """Settings from parsed flags (None: not given) over `BLITZ_*` variables over defaults.

    Flag values may be strings (parsed like the environment) or already typed values.
    Raises `SettingsError` naming the flag or variable at fault.
    """
    values: dict[str, Any] = {}
    for spec in SETTINGS:
        raw = flags.get(spec.name)
        source = spec.flag
        for env in (spec.env, *spec.fallback_env):
            if raw is None and env in environ:
                raw, source = environ[env], env
        if raw is None:
            continue
        try:
            values[spec.name] = spec.parse(raw) if isinstance(raw, str) else raw
        except ValueError as exc:
            shown = "(hidden)" if spec.secret else repr(raw)
            raise SettingsError(f"{source}: {exc}, got {shown}") from None

    values["data_dir"] = data_dir = Path(values.get("data_dir", Settings.data_dir)).expanduser()
    values.setdefault("database", str(data_dir / "blitz.db"))
    values["workspace_root"] = Path(
        values.get("workspace_root", data_dir / "workspaces")
    ).expanduser()
    return Settings(**values)
