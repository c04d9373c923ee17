"""The one table of settings: each one's flag, environment variable, parser and help.

`blitz serve`'s flags, the environment it reads, the TOML file's keys, `blitz config` and
the README's configuration table all come from `SETTINGS`; a setting exists once, here
and as a field of `Settings`.

It stays one module over the house's 450 lines on purpose: the README's settings table and
every flag are generated from this one list, so splitting it would split what is read as
one table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_args

from blitz.config import values
from blitz.config.settings import LogFormat, LogLevel

__all__ = ["SETTINGS", "SettingSpec"]


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
    # A secret: never echoed in an error message, masked by `blitz config`.
    secret: bool = False
    # The default as people read it, when it is not the field's own (`<data-dir>/blitz.db`).
    default_text: str = ""
    # The flag may be given several times; its values add up (as if comma-separated).
    repeatable: bool = False
    # Its value is a list or table: an array of tables in the TOML file, JSON elsewhere.
    structured: bool = False
    # It names a file or folder of the server's own that can hold secrets or another
    # principal's work: no command ever sees it, nor may `--command-binds` show it
    # (blitz.config.hidden).
    hidden_from_commands: bool = False

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


def _spec(
    name: str, parse: Callable[[str], Any], help: str, metavar: str = "", **more: Any
) -> SettingSpec:
    return SettingSpec(name, "BLITZ_" + name.upper(), parse, help, metavar, **more)


# The one table of settings, in the order `--help` and the README list them.
SETTINGS: tuple[SettingSpec, ...] = (
    _spec("grpc_host", values.nonempty, "gRPC listen address", "HOST"),
    _spec("grpc_port", values.port, "gRPC port (0: any free port)", "PORT"),
    _spec("http_host", values.nonempty, "Connect, gRPC-Web and health listen address", "HOST"),
    _spec("http_port", values.port, "Connect, gRPC-Web and health port (0: any free port)", "PORT"),
    _spec(
        "workers",
        values.positive_int,
        "processes serving behind the same ports (SO_REUSEPORT), sharing the store: on"
        " PostgreSQL only (a SQLite file has one writer, the process that owns it)",
        "N",
    ),
    _spec(
        "data_dir",
        values.nonempty,
        "folder of the database and the workspaces",
        "DIR",
        hidden_from_commands=True,
    ),
    _spec(
        "database",
        values.nonempty,
        "SQLite file path, `sqlite:///PATH`, or `postgresql://…` for several replicas",
        "PATH_OR_URL",
        default_text="<data-dir>/blitz.db",
        hidden_from_commands=True,
    ),
    _spec(
        "workspace_root",
        values.nonempty,
        "parent of every session's workspace folder",
        "DIR",
        default_text="<data-dir>/workspaces",
        hidden_from_commands=True,
    ),
    _spec(
        "tokens",
        values.stripped,
        "bearer tokens beside those of `blitz token create`: `NAME:TOKEN[:admin]`, comma-separated",
        "TOKENS",
        secret=True,
    ),
    _spec(
        "tokens_file",
        values.stripped,
        "a file of such tokens, one a line",
        "PATH",
        hidden_from_commands=True,
    ),
    _spec(
        "insecure",
        values.bool_,
        "serve beyond loopback with no token required (anyone who reaches a port is trusted)",
        "BOOL",
    ),
    _spec(
        "cors_origin",
        values.origins,
        "web origins whose pages may call the HTTP port (CORS): `http://localhost:5173`;"
        " repeat the flag or separate with commas (none: only the port's own console)",
        "ORIGIN",
        repeatable=True,
    ),
    _spec(
        "allowed_host",
        values.host_patterns,
        "host names the HTTP port answers to beside `localhost`, `*.localhost`, any IP"
        " address and `--public-url`'s host: `blitz.example.com`, `*.example.com`, or `*`"
        " for any; a request naming another host is refused, a defence against DNS"
        " rebinding (docs/security.md); repeat the flag or separate with commas",
        "HOST",
        repeatable=True,
    ),
    _spec("tls_cert", values.stripped, "certificate chain (PEM): both ports speak TLS", "PATH"),
    _spec(
        "tls_key",
        values.stripped,
        "private key (PEM) of `--tls-cert`",
        "PATH",
        hidden_from_commands=True,
    ),
    _spec("metrics_host", values.nonempty, "Prometheus metrics listen address", "HOST"),
    _spec(
        "metrics_port",
        values.optional_port,
        "Prometheus metrics port (unset: no metrics port; 0: any free port)",
        "PORT",
    ),
    _spec(
        "otlp_endpoint",
        values.url,
        "OTLP/HTTP collector to send traces to (unset: no tracing)",
        "URL",
        fallback_env=("OTEL_EXPORTER_OTLP_ENDPOINT",),
    ),
    _spec(
        "public_url",
        values.url,
        "where people reach the HTTP port, behind any proxy: webhook payloads link to each"
        " session in the console there, and carry signed links that answer an approval or"
        " a question (none without it)",
        "URL",
    ),
    _spec(
        "link_ttl",
        values.positive_seconds,
        "seconds an approval link (or Slack button) of a webhook's message works at most;"
        " sooner when its request expires sooner (docs/webhooks.md, Approval links)",
        "SECONDS",
    ),
    _spec(
        "slack_signing_secret",
        values.stripped,
        "the Slack app's signing secret: `POST /slack/actions` takes the buttons of `slack`"
        " webhook messages from that app only (unset: it takes none)",
        "SECRET",
        secret=True,
    ),
    _spec(
        "slack_users",
        values.slack_users,
        'who each Slack user is here: `slack_users = { U0123ABCD = "alice" }` in the file'
        " (a JSON object in the flag or variable); a button pressed by a user not in it"
        " decides nothing",
        "JSON",
        structured=True,
    ),
    _spec("model", values.nonempty, "default model of new sessions", "MODEL"),
    _spec("max_turns", values.positive_int, "default limit of model calls in one turn", "N"),
    _spec(
        "max_running_turns",
        values.positive_int,
        "turns doing work at once (a parked turn holds none); past it, see --when-full",
        "N",
    ),
    _choice(
        "when_full",
        "BLITZ_WHEN_FULL",
        ("queue", "refuse"),
        "a new turn past --max-running-turns: `queue` (accepted, it waits for a slot with a"
        " notice saying so) or `refuse` (RATE_LIMITED with a retry_after)",
    ),
    _spec(
        "turn_lease",
        values.positive_seconds,
        "seconds a replica's hold on a running turn lasts unrenewed, on PostgreSQL: another"
        " replica takes over the turns of one that died within about this long",
        "SECONDS",
    ),
    _spec(
        "turn_timeout",
        values.seconds,
        "default wall-clock limit of a turn in seconds, time parked included (0: none)",
        "SECONDS",
    ),
    _spec(
        "approval_timeout",
        values.seconds,
        "seconds an approval or question waits; then it is a DENY, or no answer, announced by"
        " a notice (0: until the turn's deadline)",
        "SECONDS",
    ),
    _spec(
        "command_timeout",
        values.positive_seconds,
        "limit of one command the agent runs, in seconds",
        "SECONDS",
    ),
    _spec(
        "command_cpu",
        values.non_negative_int,
        "CPU seconds a command may use (0: as many as `--command-timeout` allows)",
        "SECONDS",
    ),
    _spec(
        "command_memory",
        values.bytes_or_none,
        "address space of each process of a command (accepts `8GiB`; 0: no limit)",
        "BYTES",
    ),
    _spec(
        "command_file_size",
        values.bytes_or_none,
        "largest file a command may write (accepts `1GiB`; 0: no limit)",
        "BYTES",
    ),
    _spec(
        "command_processes",
        values.non_negative_int,
        "processes the server's user may have while a command runs, a fork-bomb guard"
        " (0: no limit; it counts all of that user's processes)",
        "N",
    ),
    _choice(
        "command_isolation",
        "BLITZ_COMMAND_ISOLATION",
        ("auto", "box", "landlock", "unconfined"),
        "what confines commands: `box` (bubblewrap's namespaces), `landlock`, `unconfined`,"
        " or `auto`, the strongest this machine allows (docs/security.md)",
    ),
    _spec(
        "unconfined_commands",
        values.bool_,
        "serve several principals although commands run unconfined (neither a box nor"
        " Landlock works here): each principal's commands can reach the others' files",
        "BOOL",
    ),
    _spec(
        "allow_bypass_mode",
        values.bool_,
        "let sessions and turns ask for the bypass mode, where every action goes ahead"
        " without asking (commands still run in their box)",
        "BOOL",
    ),
    _spec(
        "command_binds",
        values.paths,
        "folders bound read-only in the box beside the system, for tools outside /usr"
        " (comma-separated)",
        "DIR[,DIR…]",
    ),
    _spec(
        "command_tree_processes",
        values.non_negative_int,
        "processes a command and all it starts may have at once, where the server can make"
        " cgroups (0: no limit)",
        "N",
    ),
    _spec(
        "command_tree_memory",
        values.bytes_or_none,
        "memory a command and all it starts may use together, where the server can make"
        " cgroups (accepts `8GiB`; 0: no limit)",
        "BYTES",
    ),
    _spec("output_cap", values.bytes_, "bytes of command output kept (accepts `64KiB`)", "BYTES"),
    _choice(
        "log_format",
        "BLITZ_LOG_FORMAT",
        get_args(LogFormat),
        "`console`, `json`, or `auto` (console on a terminal)",
    ),
    _choice("log_level", "BLITZ_LOG_LEVEL", get_args(LogLevel), "lowest level logged"),
    _spec(
        "drain_timeout",
        values.seconds,
        "seconds a shutdown waits for in-flight calls and running turns",
        "SECONDS",
    ),
    _spec(
        "drain_delay",
        values.seconds,
        "seconds a shutdown keeps the ports open, failing health checks, before closing them",
        "SECONDS",
    ),
    _spec(
        "compress_streams",
        values.bool_,
        "gzip streamed messages on the Connect port when the client accepts it",
        "BOOL",
    ),
    _spec(
        "openai_api_key",
        values.stripped,
        "key for `openai:` models; never logged",
        "KEY",
        fallback_env=("OPENAI_API_KEY",),
        secret=True,
    ),
    _spec(
        "openai_base_url",
        values.url,
        "base URL for `openai:` models, a proxy say (default: OpenAI's API)",
        "URL",
    ),
    _spec(
        "anthropic_api_key",
        values.stripped,
        "key for `anthropic:` models; never logged",
        "KEY",
        fallback_env=("ANTHROPIC_API_KEY",),
        secret=True,
    ),
    _spec(
        "anthropic_base_url",
        values.url,
        "base URL for `anthropic:` models (default: Anthropic's API)",
        "URL",
    ),
    _spec(
        "base_url",
        values.url,
        "the server of `openai-compatible:NAME` models (vLLM, Ollama, llama.cpp, LM Studio),"
        " e.g. `http://127.0.0.1:11434/v1`",
        "URL",
    ),
    _spec(
        "compatible_api_key",
        values.stripped,
        "key for that server, if it needs one",
        "KEY",
        secret=True,
    ),
    _spec(
        "compatible_images",
        values.bool_,
        "whether that server's models accept images",
        "BOOL",
    ),
    _spec(
        "context_window",
        values.non_negative_int,
        "tokens assumed for a model whose context window is unknown (0: never trim its history)",
        "TOKENS",
    ),
    _spec(
        "history_turns",
        values.non_negative_int,
        "turns of a session's history kept for the model; past it the oldest go, with a"
        " notice, and a turn's cost stays flat however long the session (0: keep all)",
        "N",
    ),
    _spec(
        "model_retries",
        values.non_negative_int,
        "retries of a model call after a rate limit, a 5xx or a broken stream",
        "N",
    ),
    _spec(
        "retry_delay",
        values.seconds,
        "first backoff in seconds, doubling each retry (a provider's Retry-After wins)",
        "SECONDS",
    ),
    _spec(
        "fetch_allow_local",
        values.bool_,
        "let `fetch_url` reach loopback, private and link-local addresses",
        "BOOL",
    ),
    _spec(
        "fetch_max_bytes",
        values.bytes_,
        "largest response `fetch_url` downloads (accepts `2MiB`)",
        "BYTES",
    ),
    _spec(
        "webhook_allow_private",
        values.address_ranges,
        "internal address ranges webhooks may reach, and over plain http (comma-separated"
        " CIDR, e.g. `127.0.0.0/8` for a receiver on this machine; none: public https only)",
        "RANGES",
    ),
    _spec(
        "webhook_timeout",
        values.positive_seconds,
        "seconds one webhook attempt may take, answer included; then it is retried",
        "SECONDS",
    ),
    _spec(
        "webhook_retry_window",
        values.positive_seconds,
        "seconds a webhook delivery is retried for before it is given up",
        "SECONDS",
    ),
    _spec(
        "webhook_retry_delay",
        values.positive_seconds,
        "first backoff of a webhook delivery in seconds, doubling each retry up to an hour,"
        " with ±20% jitter (a receiver's Retry-After wins)",
        "SECONDS",
    ),
    _spec(
        "webhook_pause_after",
        values.positive_int,
        "failed webhook attempts in a row after which the webhook is paused (FAILING) and"
        " its sessions get a notice",
        "N",
    ),
    _spec(
        "webhook_workers",
        values.positive_int,
        "webhook deliveries this process sends at once (at most 8 of them to one webhook, and"
        " to one principal its share: half while it alone is busy)",
        "N",
    ),
    _spec(
        "webhooks",
        values.declared_webhooks,
        "webhooks the operator declares, each hearing of every principal's sessions (or one"
        " principal's): `[[webhooks]]` tables in the file with name, url, events, secret,"
        " format, labels, principal, description (docs/webhooks.md); a JSON list of the same"
        " in the flag or variable",
        "JSON",
        secret=True,
        structured=True,
    ),
    _spec(
        "hooks",
        values.declared_hooks,
        "hooks the operator declares, run in every principal's sessions (or one"
        " principal's) before any other: `[[hooks]]` tables in the file with name, event,"
        " command or url, secret, tools, commands, paths, timeout, fail, principal,"
        " description (docs/hooks.md); a JSON list of the same in the flag or variable",
        "JSON",
        secret=True,
        structured=True,
    ),
    _spec(
        "agents",
        values.declared_agents,
        "ACP agents sessions may be served by (Claude Code, Codex, Gemini CLI…):"
        " `[agents.NAME]` tables in the file with command, args, env, network, binds,"
        " home_files, modes… (docs/agents.md); a JSON object of the same in the flag or"
        " variable",
        "JSON",
        secret=True,
        structured=True,
    ),
    _spec(
        "default_agent",
        values.nonempty,
        "the agent a session gets when CreateSession names none: `blitz` (the built-in"
        " agent) or a declared agent's name",
        "NAME",
    ),
    _spec(
        "max_agent_processes",
        values.positive_int,
        "live ACP agent processes this server process keeps at once (one per session in"
        " use; idle ones are stopped first past it)",
        "N",
    ),
    _spec(
        "repo_allow",
        values.repo_patterns,
        "git URLs a session may be cloned from (comma-separated patterns: `*` within one"
        " path segment, a final `/**` for anything below; e.g. `https://git.example.com/"
        "acme/*,file:///srv/repos/*`; none: no session starts from a repository)",
        "PATTERNS",
        repeatable=True,
    ),
    _spec(
        "repo_dir",
        values.nonempty,
        "folder of Blitz's own git data for each session from a repository (replicas share"
        " it, as they share the workspace root)",
        "DIR",
        default_text="<data-dir>/repos",
        hidden_from_commands=True,
    ),
    _spec(
        "repo_max_size",
        values.bytes_,
        "most a session's clone may take on disk, its git data and checked-out files together"
        " (accepts `512MiB`); past it the clone stops and CreateSession fails",
        "BYTES",
    ),
    _spec(
        "repo_timeout",
        values.positive_seconds,
        "seconds a clone or a push may take before it is stopped",
        "SECONDS",
    ),
    _spec(
        "repo_push_default_branch",
        values.bool_,
        "let a push target the origin's default branch (never, by default: a push makes a"
        " new branch for review)",
        "BOOL",
    ),
    _spec(
        "repo_credentials",
        values.declared_credentials,
        "credentials git is given for sources under a URL prefix, for the clone and the push"
        " only: `[repo_credentials.NAME]` tables in the file with url, username, password"
        " (`${VAR}` from the environment), principals (docs/repositories.md); a JSON object of"
        " the same in the flag or variable",
        "JSON",
        secret=True,
        structured=True,
    ),
    _spec(
        "repo_author",
        values.nonempty,
        "author and committer of the commits Blitz makes of a session's changes",
        "'NAME <EMAIL>'",
    ),
    _spec(
        "mcp_config",
        values.stripped,
        'JSON file of MCP servers (`{"mcpServers": {NAME: {"command": …, "args": […]} or'
        ' {"url": …}}}`)',
        "PATH",
        hidden_from_commands=True,
    ),
    _spec(
        "workflows_dir",
        values.stripped,
        "folder of workflow files (`NAME.yaml`) every principal's sessions may run, beside"
        " each workspace's `.blitz/workflows/` (docs/workflows.md)",
        "DIR",
    ),
)
