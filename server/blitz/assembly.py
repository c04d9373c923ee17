"""The core assembled from the settings: the store, the agent and the core, with the
webhooks beside it and the authenticator of every call.

`open_core` is the core alone, as one `async with` resource (benchmarks and tests of the
core use it); `assembled` is what `blitz.server` puts its ports in front of. With
`blitz.server`, this is the one place that knows the concrete parts: it builds them from
the settings and wires them together; it must hold no business rule and read no
environment.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path

import structlog

from blitz.agent import (
    Agent,
    BoxSpec,
    CommandLimits,
    CommandSandbox,
    FetchLimits,
    Isolation,
    ModelAccess,
    RetryPolicy,
    available_models,
    isolation,
    load_mcp_config,
)
from blitz.auth import Authenticator, ServeRefused, authentication
from blitz.config import Settings, hidden_paths, refused_bind
from blitz.core import Retries, ServerFacts, SessionCore, WebhookCore
from blitz.core.workspace_service import IMAGE_MAX_BYTES
from blitz.outbound import AddressPolicy, parse_ranges
from blitz.redact import add_known_secrets
from blitz.store import open_store
from blitz.tracing import Tracing
from blitz.transport import MAX_REQUEST_BYTES

__all__ = ["assembled", "open_core"]

log = structlog.get_logger(__name__)


@asynccontextmanager
async def open_core(
    settings: Settings, *, tracing: Tracing | None = None
) -> AsyncIterator[SessionCore]:
    """The store, the agent and the core (its webhooks too), opened in order and closed in
    reverse."""
    async with assembled(settings, tracing=tracing) as (core, _, _):
        yield core


@asynccontextmanager
async def assembled(
    settings: Settings, *, tracing: Tracing | None
) -> AsyncIterator[tuple[SessionCore, WebhookCore, Authenticator]]:
    """`open_core`'s parts, the webhooks beside the core, and the authenticator of every
    call (which may need no token until one is made: `blitz.auth.assembly`).

    Raises ServeRefused when the server would be reachable beyond loopback with no token,
    or a webhook the configuration declares cannot be served.
    """
    add_known_secrets(
        [settings.openai_api_key, settings.anthropic_api_key, settings.compatible_api_key]
    )
    settings.workspace_root.mkdir(parents=True, exist_ok=True)
    if "://" not in settings.database:
        Path(settings.database).parent.mkdir(parents=True, exist_ok=True)
    access = ModelAccess(
        openai_api_key=settings.openai_api_key,
        openai_base_url=settings.openai_base_url,
        anthropic_api_key=settings.anthropic_api_key,
        anthropic_base_url=settings.anthropic_base_url,
        compatible_base_url=settings.base_url,
        compatible_api_key=settings.compatible_api_key,
        compatible_images=settings.compatible_images,
        default_context_window=settings.context_window,
    )
    sandbox = _sandbox(settings)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(
            open_store(settings.database, lease=settings.turn_lease)
        )
        authenticator = await authentication(settings, store)
        _check_confinement(settings, sandbox, authenticator)
        features = ("tls",) if settings.tls_cert else ()
        facts = ServerFacts(
            models=tuple(available_models(access)),
            limits={"request_bytes": MAX_REQUEST_BYTES, "image_bytes": IMAGE_MAX_BYTES},
            features=(*features, "tokens") if authenticator.required else features,
            command_isolation=sandbox.isolation.value,
        )
        agent = await stack.enter_async_context(
            Agent(
                command_timeout=settings.command_timeout,
                sandbox=sandbox,
                output_cap=settings.output_cap,
                access=access,
                retry=RetryPolicy(retries=settings.model_retries, first_delay=settings.retry_delay),
                fetch=FetchLimits(
                    allow_local=settings.fetch_allow_local, max_bytes=settings.fetch_max_bytes
                ),
                mcp_servers=load_mcp_config(settings.mcp_config) if settings.mcp_config else (),
                history_turns=settings.history_turns,
                tracer_provider=tracing.provider if tracing else None,
            )
        )
        core = await stack.enter_async_context(
            SessionCore(
                store=store,
                agent=agent,
                workspace_root=settings.workspace_root,
                default_model=settings.model,
                default_max_turns=settings.max_turns,
                default_timeout=_timedelta_or_none(settings.turn_timeout),
                approval_timeout=_timedelta_or_none(settings.approval_timeout),
                drain_timeout=settings.drain_timeout,
                max_running_turns=settings.max_running_turns,
                refuse_when_full=settings.when_full == "refuse",
                turn_lease=settings.turn_lease,
                facts=facts,
                tracer=tracing.tracer("blitz.core") if tracing else None,
                allow_bypass_mode=settings.allow_bypass_mode,
                workflows_dir=Path(settings.workflows_dir) if settings.workflows_dir else None,
            )
        )
        authenticator.on_required = partial(_tokens_now_required, settings, sandbox, core)
        webhooks = await stack.enter_async_context(_webhooks(settings, core))
        yield core, webhooks, authenticator


def _webhooks(settings: Settings, core: SessionCore) -> WebhookCore:
    """The webhooks of the core's sessions, as the settings say."""
    try:
        return WebhookCore(
            sessions=core,
            policy=AddressPolicy(ranges=parse_ranges(settings.webhook_allow_private)),
            retry=Retries(
                first_delay=settings.webhook_retry_delay,
                window=settings.webhook_retry_window,
                pause_after=settings.webhook_pause_after,
            ),
            timeout=settings.webhook_timeout,
            workers=settings.webhook_workers,
            public_url=settings.public_url,
            declared=settings.webhooks,
        )
    except ValueError as exc:
        raise ServeRefused(f"webhooks: {exc}") from None


def _sandbox(settings: Settings) -> CommandSandbox:
    """What confines every command, as configured; ServeRefused when the mechanism asked
    for does not work here, or a bind would show commands the server's own files (settings
    made in code skip `blitz.config.resolve`, which refuses it first)."""
    try:
        mechanism = isolation(settings.command_isolation)
    except ValueError as exc:
        raise ServeRefused(str(exc)) from None
    if why := refused_bind(settings):
        raise ServeRefused(f"--command-binds: {why}")
    return CommandSandbox(
        isolation=mechanism,
        limits=CommandLimits(
            cpu_seconds=settings.command_cpu or math.ceil(settings.command_timeout),
            memory_bytes=settings.command_memory,
            file_bytes=settings.command_file_size,
            processes=settings.command_processes,
        ),
        tree_processes=settings.command_tree_processes,
        tree_memory_bytes=settings.command_tree_memory,
        box=BoxSpec(
            hidden=tuple(hidden_paths(settings)),
            binds=settings.command_binds,
        ),
    )


def _tokens_now_required(
    settings: Settings, sandbox: CommandSandbox, core: SessionCore, principals: frozenset[str]
) -> None:
    """A first token was made while the server ran: GetServerInfo says tokens now, and
    the rule of `_check_confinement` is said in the log if it is broken (a restart would
    refuse it)."""
    core.add_feature("tokens")
    if (
        sandbox.isolation is Isolation.UNCONFINED
        and len(principals) > 1
        and not settings.unconfined_commands
    ):
        log.error(
            "commands run unconfined and several principals now have tokens: one's commands"
            " could read another's files; a restart will refuse this (docs/security.md)",
            principals=len(principals),
        )


def _check_confinement(
    settings: Settings, sandbox: CommandSandbox, authenticator: Authenticator
) -> None:
    """Unconfined commands of one principal could read another's files: with neither a box
    nor Landlock, a server of several principals starts only when the operator says so."""
    if sandbox.isolation is not Isolation.UNCONFINED or not authenticator.required:
        return
    if len(authenticator.principals) > 1 and not settings.unconfined_commands:
        raise ServeRefused(
            "commands would run unconfined here (neither bubblewrap's namespaces nor"
            " Landlock work), so one principal's commands could read another's files:"
            f" refusing to serve {len(authenticator.principals)} principals. Give the"
            " server what docs/security.md names, or pass --unconfined-commands to accept"
            " it."
        )


def _timedelta_or_none(seconds: float) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds > 0 else None
