"""`Settings`: everything `blitz serve` needs to know, typed, frozen, already validated.

Read once at the entry point (`blitz.config.load_settings`) and passed down as keyword
arguments; nothing deeper in the code reads the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from blitz.config.agents import DeclaredAgent
from blitz.config.hooks import DeclaredHook
from blitz.config.repos import DeclaredCredential
from blitz.config.webhooks import DeclaredWebhook

__all__ = ["LogFormat", "LogLevel", "Settings"]

LogFormat = Literal["auto", "console", "json"]
LogLevel = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything `blitz serve` needs to know, already validated."""

    grpc_host: str = "127.0.0.1"
    grpc_port: int = 50051
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    # Processes serving behind the same ports (a store they share: PostgreSQL); above 1,
    # each binds both ports with SO_REUSEPORT.
    workers: int = 1
    data_dir: Path = Path("data")
    # A path to the SQLite file or a database URL; empty in the table: `<data_dir>/blitz.db`.
    database: str = "data/blitz.db"
    workspace_root: Path = Path("data/workspaces")
    model: str = "demo"
    max_turns: int = 50
    # Turns doing work at once; more wait for a slot (a parked turn holds none).
    max_running_turns: int = 256
    when_full: str = "queue"
    # Seconds a replica's hold on a running turn lasts unrenewed (a shared database): a
    # replica that dies has its turns taken over by another within about this long.
    turn_lease: float = 6.0
    # Seconds; 0 means no deadline.
    turn_timeout: float = 3600.0
    # Seconds; 0 means an approval waits until the turn's deadline.
    approval_timeout: float = 0.0
    command_timeout: float = 120.0
    # rlimits of every command: CPU seconds (0: the command timeout's), address space and
    # file size in bytes, processes of the server's user (0: no limit).
    command_cpu: int = 0
    command_memory: int = 8 * 2**30
    command_file_size: int = 2**30
    command_processes: int = 0
    # What confines commands: auto (the strongest here), box, landlock or unconfined.
    command_isolation: str = "auto"
    # Serve several principals although commands run unconfined (no box, no Landlock).
    unconfined_commands: bool = False
    # Whether sessions and turns may ask for the bypass mode (every action approved).
    allow_bypass_mode: bool = False
    # Folders bound read-only in the box, beside the system (tools outside /usr).
    command_binds: tuple[str, ...] = ()
    # The bound of a command's whole tree, where the server can make cgroups (0: none).
    command_tree_processes: int = 1024
    command_tree_memory: int = 8 * 2**30
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
    # Turns of a session's history kept for the model; 0: all.
    history_turns: int = 100
    # Tries after a rate limit, a 5xx or a broken stream, and the first backoff in seconds.
    model_retries: int = 3
    retry_delay: float = 1.0
    # Whether fetch_url may reach loopback, private and link-local addresses.
    fetch_allow_local: bool = False
    fetch_max_bytes: int = 2 * 2**20
    # A JSON file of MCP servers; empty: none.
    mcp_config: str = ""
    # A folder of workflow files shared by every principal; empty: none.
    workflows_dir: str = ""
    # Bearer tokens, `NAME:TOKEN[:admin]` comma-separated, beside those in the store.
    tokens: str = field(default="", repr=False)
    # A file of the same, one a line.
    tokens_file: str = ""
    # Serve beyond loopback with no token required: anyone who reaches a port is trusted.
    insecure: bool = False
    # Web origins whose pages may call the HTTP port (CORS); none: same-origin pages only.
    cors_origin: tuple[str, ...] = ()
    # Host names the HTTP port answers to beside loopback names, IP addresses and the public
    # URL's host (`*.example.com`, `*`): a name it does not serve is DNS rebinding.
    allowed_host: tuple[str, ...] = ()
    # A certificate chain and its private key (PEM): both ports speak TLS.
    tls_cert: str = ""
    tls_key: str = ""
    # The Prometheus metrics port; None: no metrics listener.
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    # An OTLP/HTTP collector's base URL to send traces to; empty: no tracing.
    otlp_endpoint: str = ""
    # Where people reach the HTTP port (behind any proxy); webhook payloads link there, and
    # carry approval links (blitz.core.links) only when it is set.
    public_url: str = ""
    # Seconds an approval link works at most (its request's own expiry, if sooner).
    link_ttl: float = 24 * 3600.0
    # The Slack app whose buttons `POST /slack/actions` takes (empty: none), and which
    # principal each Slack user id is.
    slack_signing_secret: str = field(default="", repr=False)
    slack_users: Mapping[str, str] = field(default_factory=dict)
    # Webhooks: the internal address ranges deliveries may reach (none: public ones only),
    # an attempt's limit, the retry window and first backoff in seconds, the failed
    # attempts in a row that pause a webhook, and the deliveries sent at once.
    webhook_allow_private: tuple[str, ...] = ()
    webhook_timeout: float = 10.0
    webhook_retry_window: float = 24 * 3600.0
    webhook_retry_delay: float = 5.0
    webhook_pause_after: int = 20
    webhook_workers: int = 32
    # Webhooks declared in the configuration file (`[[webhooks]]`).
    webhooks: tuple[DeclaredWebhook, ...] = ()
    # Hooks declared in the configuration file (`[[hooks]]`, docs/hooks.md), which run
    # before every other, in the file's order.
    hooks: tuple[DeclaredHook, ...] = ()
    # ACP agents declared in the configuration file (`[agents.NAME]`, docs/agents.md), the
    # agent a session gets when CreateSession names none ("blitz": the built-in one), and
    # the live agent processes one server process keeps at most.
    agents: tuple[DeclaredAgent, ...] = ()
    default_agent: str = "blitz"
    max_agent_processes: int = 16
    # Sessions from a repository (docs/repositories.md): the URL patterns a source must
    # match (none: no session may start from one), where Blitz keeps its own git data for
    # each, the most its clone may take on disk,
    # the seconds a clone or a push may take, whether a push may target the origin's
    # default branch, the credentials git is given, and the author of Blitz's commits.
    repo_allow: tuple[str, ...] = ()
    repo_dir: Path = Path("data/repos")
    repo_max_size: int = 1024 * 1024 * 1024
    repo_timeout: float = 600.0
    repo_push_default_branch: bool = False
    repo_credentials: tuple[DeclaredCredential, ...] = ()
    repo_author: str = "Blitz <blitz@localhost>"
    # The TOML file these settings were read from (`--config`, `BLITZ_CONFIG`); empty:
    # none. Not a setting of the table: it is where settings come from. Kept because it
    # can hold every secret the server has, and no command may see it (config/hidden.py).
    config_file: str = ""
