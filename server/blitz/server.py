"""The server assembled: store, agent and core, with the gRPC and HTTP ports in front.

Beside them, when configured: a third port serving Prometheus metrics (`blitz.metrics`),
open from before the core starts until after it closes, and tracing (`blitz.tracing`),
whose spans are flushed last.

`running_server` is the whole server as one `async with` resource (tests use it with port
0 and read the bound ports from it); `serve` runs it until SIGTERM or SIGINT. Leaving the
block drains, in this order:

1. the gate closes: new calls get UNAVAILABLE (SHUTTING_DOWN), health reports NOT_SERVING;
2. both ports stop accepting; in-flight unary calls get up to `drain_timeout` to finish;
3. open streams end with UNAVAILABLE (SHUTTING_DOWN): clients resume with `Watch`;
4. the core closes (it drains its turns), then the store.

This module is the one place that knows the concrete parts: the store, the agent (behind
`blitz.ports.AgentPort`), the core (behind `blitz.ports.SessionPort` and `WorkspacePort`)
and the transports. It wires them together; it must hold no business rule and read no
environment.
"""

from __future__ import annotations

import asyncio
import math
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import structlog
from grpc_health.v1 import health

from blitz import metrics
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
from blitz.config import Settings
from blitz.core import (
    Retries,
    ServerFacts,
    SessionCore,
    WebhookCore,
    WorkflowCore,
    WorkspaceCore,
)
from blitz.core.workspace_service import IMAGE_MAX_BYTES
from blitz.outbound import AddressPolicy, parse_ranges
from blitz.ports import SessionPort, WebhookPort, WorkflowPort, WorkspacePort
from blitz.process import settle_heap, undumpable
from blitz.redact import add_known_secrets
from blitz.store import open_store
from blitz.tracing import Tracing, open_tracing
from blitz.transport import (
    MAX_REQUEST_BYTES,
    CallGate,
    GatedHealthServicer,
    HttpApp,
    HttpServer,
    Tls,
    bind_grpc_server,
    build_connect_apps,
    build_grpc_server,
)
from blitz.transport.console import ConsoleApp
from blitz.transport.cors import with_cors
from blitz.transport.methods import (
    SESSION_SERVICE,
    WEBHOOK_SERVICE,
    WORKFLOW_SERVICE,
    WORKSPACE_SERVICE,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from blitz.workers import Workers

__all__ = ["RunningServer", "open_core", "running_server", "serve"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunningServer:
    """A started server: where it listens and the ports it serves."""

    settings: Settings
    sessions: SessionPort
    workspaces: WorkspacePort
    webhooks: WebhookPort
    workflows: WorkflowPort
    gate: CallGate
    grpc_port: int
    http_port: int
    # None: no metrics port.
    metrics_port: int | None = None
    # What confines commands (`blitz.agent.sandbox.Isolation`); "" when not this server's.
    commands: str = ""

    @property
    def grpc_target(self) -> str:
        """`host:port` for a gRPC channel."""
        return _hostport(self.settings.grpc_host, self.grpc_port)

    @property
    def http_url(self) -> str:
        """Base URL for Connect and gRPC-Web clients."""
        scheme = "https://" if self.settings.tls_cert else "http://"
        return scheme + _hostport(self.settings.http_host, self.http_port)


@asynccontextmanager
async def open_core(
    settings: Settings, *, tracing: Tracing | None = None
) -> AsyncIterator[SessionCore]:
    """The store, the agent and the core (its webhooks too), opened in order and closed in
    reverse."""
    async with _assembled(settings, tracing=tracing) as (core, _, _):
        yield core


@asynccontextmanager
async def _assembled(
    settings: Settings, *, tracing: Tracing | None
) -> AsyncIterator[tuple[SessionCore, WebhookCore, Authenticator]]:
    """`open_core`'s parts, the webhooks beside the core, and the authenticator of every
    call (which may need no token until one is made, auth/assembly.py).

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


@asynccontextmanager
async def running_server(
    settings: Settings,
    *,
    ports: tuple[SessionPort, WorkspacePort, WebhookPort, WorkflowPort] | None = None,
    span_exporter: SpanExporter | None = None,
) -> AsyncIterator[RunningServer]:
    """Start the ports; on exit, drain (see the module doc) and close everything.

    With `ports`, serve those and leave closing them to the caller; otherwise open the
    store, agent and core from `settings` (`open_core`). With `span_exporter`, trace to it
    rather than to `settings.otlp_endpoint`. Raises OSError when a port cannot be bound.
    """
    async with AsyncExitStack() as stack:
        tracing = await stack.enter_async_context(
            open_tracing(settings.otlp_endpoint, exporter=span_exporter)
        )
        metrics_port = await _serve_metrics(stack, settings)
        ready: Callable[[], Awaitable[None]] | None = None
        authenticate = None
        commands = ""
        notes: tuple[str, ...] = ()
        if ports is None:
            core, webhook_core, authenticator = await stack.enter_async_context(
                _assembled(settings, tracing=tracing)
            )
            ports = (
                core,
                WorkspaceCore(sessions=core),
                webhook_core,
                WorkflowCore(sessions=core),
            )
            authenticate = authenticator.authenticate
            store = core.store
            commands = core.facts.command_isolation
            if commands == Isolation.UNCONFINED.value:
                notes = ("WARNING: commands run unconfined (docs/security.md)",)

            async def ready() -> None:
                await store.ping()

        sessions, workspaces, webhooks, workflows = ports
        served = {
            SESSION_SERVICE.full_name: sessions,
            WORKSPACE_SERVICE.full_name: workspaces,
            WEBHOOK_SERVICE.full_name: webhooks,
            WORKFLOW_SERVICE.full_name: workflows,
        }
        tls = _tls(settings)
        gate = CallGate()
        health_servicer = GatedHealthServicer(gate)
        await health_servicer.serving()
        grpc_server = build_grpc_server(
            served,
            gate,
            health_servicer,
            authenticate=authenticate,
            interceptors=[tracing.grpc_interceptor()] if tracing else (),
            reuse_port=settings.workers > 1,
        )
        grpc_port = bind_grpc_server(grpc_server, settings.grpc_host, settings.grpc_port, tls=tls)
        connect_apps = build_connect_apps(
            served, gate, authenticate=authenticate, compress_streams=settings.compress_streams
        )
        console = ConsoleApp()
        http_app = with_cors(
            HttpApp([*connect_apps, console], gate, ready=ready, notes=notes, index=console),
            settings.cors_origin,
        )
        http = HttpServer(
            tracing.asgi(http_app) if tracing else http_app,
            host=settings.http_host,
            port=settings.http_port,
            shutdown_timeout=settings.drain_timeout,
            tls=tls,
            reuse_port=settings.workers > 1,
        )
        await grpc_server.start()
        # Safety net for a failed start or a cancelled drain: stops at once, no-op after.
        stack.push_async_callback(grpc_server.stop, None)
        await http.start()
        stack.push_async_callback(http.shutdown, force=True)
        server = RunningServer(
            settings=settings,
            sessions=sessions,
            workspaces=workspaces,
            webhooks=webhooks,
            workflows=workflows,
            gate=gate,
            grpc_port=grpc_port,
            http_port=http.port,
            metrics_port=metrics_port,
            commands=commands,
        )
        try:
            yield server
        finally:
            await _drain(
                gate,
                health_servicer,
                grpc_server,
                http,
                grace=settings.drain_timeout,
                delay=settings.drain_delay,
            )


def _sandbox(settings: Settings) -> CommandSandbox:
    """What confines every command, as configured; ServeRefused when the mechanism asked
    for does not work here."""
    try:
        mechanism = isolation(settings.command_isolation)
    except ValueError as exc:
        raise ServeRefused(str(exc)) from None
    secret_files = (settings.tokens_file, settings.tls_key, settings.mcp_config)
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
            secret_files=tuple(str(Path(f).resolve()) for f in secret_files if f),
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


async def _serve_metrics(stack: AsyncExitStack, settings: Settings) -> int | None:
    """Serve the metrics on a port of their own, stopped by `stack`; the port, if any."""
    if settings.metrics_port is None:
        return None
    http = HttpServer(
        metrics.asgi_app(),
        host=settings.metrics_host,
        port=settings.metrics_port,
        shutdown_timeout=settings.drain_timeout,
    )
    await http.start()
    stack.push_async_callback(http.shutdown)
    return http.port


async def _drain(
    gate: CallGate,
    health_servicer: health.aio.HealthServicer,
    grpc_server: grpc.aio.Server,
    http: HttpServer,
    *,
    grace: float,
    delay: float = 0.0,
) -> None:
    started = time.monotonic()
    log.info("draining", grace_s=grace)
    gate.close()
    await health_servicer.enter_graceful_shutdown()
    if delay > 0:
        # Health checks fail and new calls are refused, the ports still open: a load
        # balancer sees it and routes elsewhere before the connections go.
        await asyncio.sleep(delay)
    # Both stop accepting at once; each cancels what is still open after its grace.
    stopping = [
        asyncio.create_task(grpc_server.stop(grace=grace), name="grpc-stop"),
        asyncio.create_task(http.shutdown(), name="http-stop"),
    ]
    try:
        if not await gate.wait_unary_idle(grace):
            log.warning("unary calls still running after the drain timeout", grace_s=grace)
        ended = gate.end_streams()
        if ended:
            log.info("ended open streams", streams=ended)
        await asyncio.gather(*stopping)
    finally:
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)
    log.info("ports closed", drain_s=round(time.monotonic() - started, 3))


async def serve(settings: Settings, *, workers: Workers | None = None) -> None:
    """Run the server until SIGTERM or SIGINT, then drain and return.

    A second signal during the drain cancels it: the store and core still close, and the
    cancellation propagates. `workers` (`--workers`, already started) are watched while
    this serves, told to stop with it, and waited for before this returns.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    main = asyncio.current_task()
    received: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        if stop.is_set():
            log.warning("second signal: stopping without draining", signal=sig.name)
            if main is not None:
                main.cancel()
        else:
            stop.set()
            if workers is not None:
                workers.terminate()

    handled = (signal.SIGTERM, signal.SIGINT)
    for sig in handled:
        loop.add_signal_handler(sig, on_signal, sig)
    undumpable()
    try:
        async with running_server(settings) as server:
            log.info(
                "serving",
                grpc=server.grpc_target,
                http=server.http_url,
                grpc_port=server.grpc_port,
                http_port=server.http_port,
                commands=server.commands,
                metrics_port=server.metrics_port,
            )
            if server.commands == Isolation.UNCONFINED.value:
                log.warning(
                    "UNCONFINED: commands run with the server's own access to files and"
                    " network; see docs/security.md",
                    several_principals=settings.unconfined_commands,
                )
            settle_heap()
            watching = asyncio.create_task(workers.watch()) if workers is not None else None
            await stop.wait()
            log.info("shutting down", signal=received[0] if received else None)
            if watching is not None:
                watching.cancel()
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        if workers is not None:
            await asyncio.to_thread(workers.wait, settings.drain_timeout + 5.0)
    log.info("stopped")


def _tls(settings: Settings) -> Tls | None:
    """The certificate and key both ports serve, read now so that a bad file stops the start."""
    if not settings.tls_cert:
        return None
    try:
        tls = Tls(
            Path(settings.tls_cert).read_bytes(),
            Path(settings.tls_key).read_bytes(),
            cert_file=settings.tls_cert,
            key_file=settings.tls_key,
        )
    except OSError as exc:
        raise ServeRefused(f"TLS: cannot read {exc.filename} ({exc.strerror})") from None
    if tls.is_ca():
        log.warning(
            "the TLS certificate is a CA's (basicConstraints CA:TRUE): grpcio and curl take"
            " it, but Connect clients on rustls refuse it (CaUsedAsEndEntity); serve a leaf"
            " certificate that CA issued (docs/operations.md, TLS)",
            cert=settings.tls_cert,
        )
    return tls


def _timedelta_or_none(seconds: float) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds > 0 else None


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
