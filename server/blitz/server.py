"""The server: the assembled core (`blitz.assembly`), with the gRPC and HTTP ports in front.

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

This module and `blitz.assembly` are the one place that knows the concrete parts: the
assembly builds the store, the agent (behind `blitz.ports.AgentPort`) and the core's
services, and hands over each service's port by the service's name
(`blitz.ports.ServicePorts`); here the transports are put in front of them, serving every
service of `blitz.transport.methods.SERVICES` from that mapping. It must hold no business
rule and read no environment.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import grpc
import structlog
from grpc_health.v1 import health

from blitz import metrics
from blitz.agent import Isolation
from blitz.assembly import open_core
from blitz.auth import ServeRefused
from blitz.config import Settings
from blitz.ports import (
    SchedulePort,
    ServicePorts,
    SessionPort,
    WebhookPort,
    WorkflowPort,
    WorkspacePort,
)
from blitz.process import settle_heap, undumpable
from blitz.tracing import open_tracing
from blitz.transport import (
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
from blitz.transport.http import MountedApp
from blitz.transport.links import LinksApp
from blitz.transport.methods import (
    SCHEDULE_SERVICE,
    SERVICES,
    SESSION_SERVICE,
    WEBHOOK_SERVICE,
    WORKFLOW_SERVICE,
    WORKSPACE_SERVICE,
)
from blitz.transport.rebinding import guarded
from blitz.transport.slack import SlackApp

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from blitz.workers import Workers

__all__ = ["CannotListen", "RunningServer", "running_server", "serve"]

log = structlog.get_logger(__name__)


class CannotListen(OSError):
    """A port that could not be bound, with the settings that chose its address (by their
    names in `blitz.config`: `grpc_host` and `grpc_port`, say), for the entry point to name
    the flags; `in_use` when another process holds the address."""

    def __init__(self, message: str, *, host_setting: str, port_setting: str, in_use: bool):
        super().__init__(message)
        self.host_setting = host_setting
        self.port_setting = port_setting
        self.in_use = in_use


@dataclass(frozen=True)
class RunningServer:
    """A started server: where it listens and the ports it serves."""

    settings: Settings
    # Each service's port by the service's full name (`blitz.ports.ServicePorts`).
    ports: ServicePorts
    gate: CallGate
    grpc_port: int
    http_port: int
    # None: no metrics port.
    metrics_port: int | None = None
    # What confines commands (`blitz.agent.sandbox.Isolation`); "" when not this server's.
    commands: str = ""

    @property
    def sessions(self) -> SessionPort:
        return cast("SessionPort", self.ports[SESSION_SERVICE.full_name])

    @property
    def workspaces(self) -> WorkspacePort:
        return cast("WorkspacePort", self.ports[WORKSPACE_SERVICE.full_name])

    @property
    def webhooks(self) -> WebhookPort:
        return cast("WebhookPort", self.ports[WEBHOOK_SERVICE.full_name])

    @property
    def workflows(self) -> WorkflowPort:
        return cast("WorkflowPort", self.ports[WORKFLOW_SERVICE.full_name])

    @property
    def schedules(self) -> SchedulePort:
        return cast("SchedulePort", self.ports[SCHEDULE_SERVICE.full_name])

    @property
    def grpc_target(self) -> str:
        """`host:port` for a gRPC channel."""
        return _hostport(self.settings.grpc_host, self.grpc_port)

    @property
    def http_url(self) -> str:
        """Base URL for Connect and gRPC-Web clients."""
        scheme = "https://" if self.settings.tls_cert else "http://"
        return scheme + _hostport(self.settings.http_host, self.http_port)

    @property
    def console_url(self) -> str:
        """Where a browser opens the console: `--public-url` when set, else the HTTP port,
        by a loopback address when it listens on every interface (a browser cannot open
        0.0.0.0)."""
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/") + "/"
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(
            self.settings.http_host, self.settings.http_host
        )
        scheme = "https://" if self.settings.tls_cert else "http://"
        return f"{scheme}{_hostport(host, self.http_port)}/"


@asynccontextmanager
async def running_server(
    settings: Settings,
    *,
    ports: ServicePorts | None = None,
    span_exporter: SpanExporter | None = None,
) -> AsyncIterator[RunningServer]:
    """Start the ports; on exit, drain (see the module doc) and close everything.

    With `ports` (each service's port by the service's full name, one for every service
    of `methods.SERVICES`), serve those and leave closing them to the caller; otherwise
    open the store, agent and core from `settings` (`blitz.assembly`). With
    `span_exporter`, trace to it rather than to `settings.otlp_endpoint`. Raises OSError
    when a port cannot be bound, ValueError when a service has no port.
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
        # The approval links' pages and Slack's buttons (the core's; none for given ports).
        pages: list[MountedApp] = []
        if ports is None:
            core = await stack.enter_async_context(open_core(settings, tracing=tracing))
            ports = core.ports
            if core.links is not None:
                pages.append(LinksApp(core.links))
            if core.slack is not None:
                pages.append(SlackApp(core.slack))
            authenticate = core.authenticator.authenticate
            store = core.store
            commands = core.commands
            if commands == Isolation.UNCONFINED.value:
                notes = ("WARNING: commands run unconfined (docs/security.md)",)

            async def ready() -> None:
                await store.ping()

        if missing := [s.full_name for s in SERVICES if s.full_name not in ports]:
            raise ValueError(f"no port serves {', '.join(missing)}")
        tls = _tls(settings)
        gate = CallGate()
        health_servicer = GatedHealthServicer(gate)
        await health_servicer.serving()
        grpc_server = build_grpc_server(
            ports,
            gate,
            health_servicer,
            authenticate=authenticate,
            interceptors=[tracing.grpc_interceptor()] if tracing else (),
            reuse_port=settings.workers > 1,
        )
        try:
            grpc_port = bind_grpc_server(
                grpc_server, settings.grpc_host, settings.grpc_port, tls=tls
            )
        except OSError as exc:
            raise _cannot_listen(
                exc, "gRPC", "grpc", settings.grpc_host, settings.grpc_port
            ) from None
        connect_apps = build_connect_apps(
            ports, gate, authenticate=authenticate, compress_streams=settings.compress_streams
        )
        console = ConsoleApp()
        http_app = guarded(
            HttpApp(
                [*connect_apps, console, *pages], gate, ready=ready, notes=notes, index=console
            ),
            allowed_hosts=settings.allowed_host,
            cors_origins=settings.cors_origin,
            public_url=settings.public_url,
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
        try:
            await http.start()
        except OSError as exc:
            raise _cannot_listen(
                exc, "HTTP", "http", settings.http_host, settings.http_port
            ) from None
        stack.push_async_callback(http.shutdown, force=True)
        server = RunningServer(
            settings=settings,
            ports=ports,
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
    try:
        await http.start()
    except OSError as exc:
        raise _cannot_listen(
            exc, "metrics", "metrics", settings.metrics_host, settings.metrics_port
        ) from None
    stack.push_async_callback(http.shutdown)
    return http.port


def _cannot_listen(exc: OSError, what: str, prefix: str, host: str, port: int) -> CannotListen:
    """`exc`, a port's failure to bind, as a CannotListen for the settings `prefix`_host and
    `prefix`_port. grpc's own error names no reason (grpc-core logs it, and its lines are
    off but at debug: blitz_cli.command.grpc_verbosity), so the address is tried once more
    here, with a plain socket, for the system's word on why."""
    why = _bind_error(host, port)
    message = str(exc)
    if why is not None and why.errno:
        message = f"cannot listen for {what} on {_hostport(host, port)}: {os.strerror(why.errno)}"
    return CannotListen(
        message,
        host_setting=f"{prefix}_host",
        port_setting=f"{prefix}_port",
        in_use=why is not None and why.errno == errno.EADDRINUSE,
    )


def _bind_error(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be bound now; None when it can (or `port` is 0: any port)."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.create_server((host, port), family=family):
            return None
    except OSError as exc:
        return exc


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
            if workers is not None:
                workers.hurry()
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
                console=server.console_url,
            )
            # The line a person reads, in a terminal or a container's JSON log alike.
            log.info(f"open the console at {server.console_url}", console=server.console_url)
            if server.commands == Isolation.UNCONFINED.value:
                log.warning(
                    "UNCONFINED: commands run with the server's own access to files and"
                    " network; see docs/security.md",
                    several_principals=settings.unconfined_commands,
                )
            settle_heap()
            async with _watching(workers, stop):
                await stop.wait()
                log.info("shutting down", signal=received[0] if received else None)
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        if workers is not None:
            await asyncio.to_thread(workers.wait, settings.drain_timeout + 5.0)
    log.info("stopped")


@asynccontextmanager
async def _watching(workers: Workers | None, stop: asyncio.Event) -> AsyncIterator[None]:
    """The workers watched (restarted when one dies) for as long as the block runs; the
    watcher is cancelled and awaited on the way out, and a failure of its own is logged
    rather than lost with an unawaited task. A watcher that ends by itself (a worker given
    up) sets `stop`: the server drains and stops."""
    if workers is None:
        yield
        return
    watcher = asyncio.create_task(workers.watch(), name="blitz-workers-watch")
    watcher.add_done_callback(lambda _: stop.set())
    try:
        yield
    finally:
        watcher.cancel()
        (ended,) = await asyncio.gather(watcher, return_exceptions=True)
        if isinstance(ended, Exception):
            log.error("workers_watch_failed", exc_info=ended)


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


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
