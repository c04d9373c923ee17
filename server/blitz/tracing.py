"""Tracing with OpenTelemetry: off unless an OTLP endpoint (or, in tests, an exporter) is given.

`Tracing` is the server's own tracer provider and what each part takes from it: the gRPC
port's interceptor and the HTTP port's ASGI middleware (each call a span, continuing the
trace an incoming `traceparent` names), the core's tracer (a span per run of a turn), and
the provider the agent hands pydantic-ai (a span per model call and per tool call). The
provider is not installed as OpenTelemetry's global one, so that two servers in one
process keep their spans apart. `open_tracing` opens it; leaving flushes what is still
buffered and shuts the exporter down.

Importing this module loads no OpenTelemetry SDK or instrumentation: only making a
`Tracing` does, so a server with tracing off pays nothing for it. It reads no environment
itself; the OTLP exporter honours the standard `OTEL_EXPORTER_OTLP_*` variables (headers,
timeout, certificate) and the resource `OTEL_RESOURCE_ATTRIBUTES`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import grpc
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

__all__ = ["Tracing", "open_tracing"]

# Probes every few seconds would bury the calls worth seeing.
_UNTRACED_PATHS = "/healthz,/readyz"


class Tracing:
    """A tracer provider exporting to one exporter, in batches, and its parts for the ports."""

    def __init__(self, exporter: SpanExporter) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.provider: TracerProvider = TracerProvider(
            resource=Resource.create({"service.name": "blitz"})
        )
        self.provider.add_span_processor(BatchSpanProcessor(exporter))

    def tracer(self, name: str) -> Tracer:
        return self.provider.get_tracer(name)

    def grpc_interceptor(self) -> grpc.aio.ServerInterceptor:
        """A span for each call of Blitz's services (health checks and reflection left out)."""
        from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters

        interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(
            tracer_provider=self.provider, filter_=filters.service_prefix("blitz.")
        )
        return interceptor

    def asgi(self, app: Any) -> Any:
        """`app` with a span for each HTTP request but the health probes.

        One span per request: none for each message a stream receives or sends.
        """
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        return OpenTelemetryMiddleware(
            app,
            tracer_provider=self.provider,
            excluded_urls=_UNTRACED_PATHS,
            exclude_spans=["receive", "send"],
        )


@asynccontextmanager
async def open_tracing(
    endpoint: str = "", *, exporter: SpanExporter | None = None
) -> AsyncIterator[Tracing | None]:
    """Tracing to `exporter`, else to the OTLP/HTTP collector at `endpoint`; None if neither.

    `endpoint` is the collector's base URL, as in `OTEL_EXPORTER_OTLP_ENDPOINT`: spans go
    to its `/v1/traces`. On exit, buffered spans are flushed (off the event loop).
    """
    if exporter is None:
        if not endpoint:
            yield None
            return
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    tracing = Tracing(exporter)
    try:
        yield tracing
    finally:
        await asyncio.to_thread(tracing.provider.shutdown)
