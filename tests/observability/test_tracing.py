"""Tracing: a call that carries a trace context is traced in that trace, down to its turn.

The server traces to an in-memory exporter handed to it (`running_server(span_exporter=)`),
or to an OTLP/HTTP collector at its configured endpoint: here a small receiver on
127.0.0.1 that keeps what is posted to it, since no collector runs in the tests. Spans are
read once the server has stopped, which flushes every one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from support.wire import decide, drive, open_wire

from blitz.config import Settings
from blitz.server import running_server
from blitz.tracing import open_tracing
from blitz.transport import HttpServer
from blitz.v1.turn_pb2 import DECISION_ONCE as ONCE

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN_ID}-01"

RPC_NAMES = {
    "grpc": "/blitz.v1.SessionService/RunTurn",
    "connect": "POST /blitz.v1.SessionService/RunTurn",
}


def in_trace(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    return [span for span in spans if span.context.trace_id == int(TRACE_ID, 16)]


def ancestors(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> list[str]:
    """The names of the span's parents, nearest first."""
    by_id = {s.context.span_id: s for s in spans}
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_run_turn_carrying_a_traceparent_is_traced_in_that_trace(
    settings: Settings, kind: str
) -> None:
    exporter = InMemorySpanExporter()
    async with running_server(settings, span_exporter=exporter) as server:
        wire = open_wire(kind, server, headers={"traceparent": TRACEPARENT})
        try:
            session = await wire.create_session()
            events = await wire.run_all(session.id, "ls")
        finally:
            await wire.close()
    spans = in_trace(exporter.get_finished_spans())

    (rpc,) = [span for span in spans if span.name == RPC_NAMES[kind]]
    assert rpc.kind == SpanKind.SERVER
    assert rpc.parent is not None and rpc.parent.span_id == int(CALLER_SPAN_ID, 16)
    (turn,) = [span for span in spans if span.name == "blitz.turn"]
    assert turn.parent is not None and turn.parent.span_id == rpc.context.span_id
    assert turn.attributes is not None
    assert turn.attributes["blitz.session_id"] == session.id
    assert turn.attributes["blitz.turn_id"] == events[0].turn_id
    assert turn.attributes["blitz.turn.state"] == "finished"
    model_calls = [span for span in spans if span.name == "chat demo"]
    assert len(model_calls) == events[-1].finished.after.calls
    (tool,) = [span for span in spans if span.name == "execute_tool list_files"]
    for span in [*model_calls, tool]:
        assert "blitz.turn" in ancestors(span, spans), span.name


async def test_a_resumed_turn_is_traced_under_the_call_that_resumed_it(
    settings: Settings,
) -> None:
    exporter = InMemorySpanExporter()
    async with running_server(settings, span_exporter=exporter) as server:
        wire = open_wire("grpc", server)
        decider = open_wire("grpc", server, headers={"traceparent": TRACEPARENT})
        try:
            session = await wire.create_session()
            # Decide carries the trace context; RunTurn does not.
            await drive(wire, session.id, "$ echo resumed", decide(decider, session.id, ONCE))
        finally:
            await wire.close()
            await decider.close()
    spans = in_trace(exporter.get_finished_spans())

    (turn,) = [span for span in spans if span.name == "blitz.turn"]
    assert turn.attributes is not None and turn.attributes["blitz.turn.resumed"] is True
    assert ancestors(turn, spans) == ["/blitz.v1.SessionService/Decide"]
    (tool,) = [span for span in spans if span.name == "execute_tool run_command"]
    assert "blitz.turn" in ancestors(tool, spans)


async def test_spans_go_to_the_configured_otlp_endpoint(settings: Settings) -> None:
    posted: list[tuple[str, bytes]] = []
    collector = HttpServer(_receiver(posted), host="127.0.0.1", port=0)
    await collector.start()
    try:
        endpoint = f"http://127.0.0.1:{collector.port}"
        async with running_server(replace(settings, otlp_endpoint=endpoint)) as server:
            wire = open_wire("connect", server, headers={"traceparent": TRACEPARENT})
            try:
                session = await wire.create_session()
                await wire.run_all(session.id, "hello")
            finally:
                await wire.close()
    finally:
        await collector.shutdown()

    assert posted and {path for path, _ in posted} == {"/v1/traces"}
    names = set()
    for _, body in posted:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "blitz"
            names |= {span.name for scope in resource.scope_spans for span in scope.spans}
    assert {"POST /blitz.v1.SessionService/RunTurn", "blitz.turn", "chat demo"} <= names


async def test_there_is_no_tracing_without_an_endpoint() -> None:
    async with open_tracing("") as tracing:
        assert tracing is None


def _receiver(posted: list[tuple[str, bytes]]) -> Any:
    """An ASGI app that keeps each request's path and body and answers 200, as OTLP wants."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        posted.append((scope["path"], body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app
