"""Shutdown: in-flight unary calls finish, open streams end with SHUTTING_DOWN, fast."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from dataclasses import replace

import grpc
import httpx
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from support.fake_core import FakeCore
from support.waiting import wait_until

from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_connect import SessionServiceClient
from blitz.v1.session_pb2_grpc import SessionServiceStub


async def draining(server: RunningServer) -> None:
    """Wait until the server's gate has closed (it offers no event to wait on)."""
    closed = await wait_until(lambda: not server.gate.serving, within=5, every=0.01)
    assert closed, "the gate stayed open"


def grpc_reason(error: grpc.aio.AioRpcError) -> str:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    info = t.ErrorInfo()
    status.details[0].Unpack(info)
    return info.reason


async def test_shutdown_ends_open_streams_with_shutting_down_on_both_wires(
    settings: Settings, core: FakeCore
) -> None:
    async with AsyncExitStack() as clients:
        server_stack = AsyncExitStack()
        server: RunningServer = await server_stack.enter_async_context(
            running_server(settings, ports=core.ports)
        )
        channel = await clients.enter_async_context(grpc.aio.insecure_channel(server.grpc_target))
        connect = await clients.enter_async_context(SessionServiceClient(server.http_url))
        grpc_call = SessionServiceStub(channel).Watch(s.WatchRequest(session_id="a", follow=True))
        connect_events = aiter(connect.watch(s.WatchRequest(session_id="b", follow=True)))
        assert (await grpc_call.read()).seq == 1
        assert (await anext(connect_events)).seq == 1

        started = time.monotonic()
        drain = asyncio.create_task(server_stack.aclose())
        with pytest.raises(grpc.aio.AioRpcError) as grpc_error:
            while await grpc_call.read() != grpc.aio.EOF:
                pass
        with pytest.raises(ConnectError) as connect_error:
            await anext(connect_events)
        await drain
        elapsed = time.monotonic() - started

    assert grpc_error.value.code() == grpc.StatusCode.UNAVAILABLE
    assert grpc_reason(grpc_error.value) == "SHUTTING_DOWN"
    assert connect_error.value.code == Code.UNAVAILABLE
    [detail] = connect_error.value.details
    assert t.ErrorInfo.FromString(detail.message_bytes).reason == "SHUTTING_DOWN"
    assert core.closed_streams == 2
    assert elapsed < settings.drain_timeout, "streams held the drain to its timeout"


async def test_shutdown_lets_in_flight_unary_calls_finish(
    settings: Settings, core: FakeCore
) -> None:
    async with AsyncExitStack() as clients:
        server_stack = AsyncExitStack()
        server: RunningServer = await server_stack.enter_async_context(
            running_server(settings, ports=core.ports)
        )
        channel = await clients.enter_async_context(grpc.aio.insecure_channel(server.grpc_target))
        connect = await clients.enter_async_context(SessionServiceClient(server.http_url))
        stub = SessionServiceStub(channel)

        async def grpc_create() -> s.Session:
            return await stub.CreateSession(s.CreateSessionRequest(title="slow"))

        grpc_call = asyncio.create_task(grpc_create())
        connect_call = asyncio.create_task(
            connect.create_session(s.CreateSessionRequest(title="slow"))
        )
        async with asyncio.timeout(5):
            await core.wait_until(lambda c: c.slow_calls == 2)

        drain = asyncio.create_task(server_stack.aclose())
        await draining(server)
        core.release.set()
        grpc_session, connect_session = await asyncio.gather(grpc_call, connect_call)
        await drain

    assert grpc_session.title == connect_session.title == "slow"


async def test_healthz_says_so_while_shutting_down(settings: Settings, core: FakeCore) -> None:
    """Between the gate closing and the port closing, /healthz answers 503."""
    from blitz.transport import CallGate, HttpApp

    gate = CallGate()
    app = HttpApp([], gate)
    gate.close()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://blitz",  # type: ignore[arg-type]
    ) as http:
        reply = await http.get("/healthz")

    assert reply.status_code == 503


async def test_a_drain_delay_keeps_the_ports_open_answering_503(
    settings: Settings, core: FakeCore
) -> None:
    settings = replace(settings, drain_delay=0.5)
    server_stack = AsyncExitStack()
    server: RunningServer = await server_stack.enter_async_context(
        running_server(settings, ports=core.ports)
    )
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        assert (await http.get("/healthz")).status_code == 200
        drain = asyncio.create_task(server_stack.aclose())
        await draining(server)
        # A load balancer's fresh connection still gets an answer: not serving.
        async with httpx.AsyncClient(base_url=server.http_url) as fresh:
            assert (await fresh.get("/healthz")).status_code == 503
        await drain


async def test_a_health_watcher_does_not_hold_the_drain(settings: Settings, core: FakeCore) -> None:
    server_stack = AsyncExitStack()
    server: RunningServer = await server_stack.enter_async_context(
        running_server(settings, ports=core.ports)
    )
    async with grpc.aio.insecure_channel(server.grpc_target) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
        assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
        started = time.monotonic()
        await server_stack.aclose()
        elapsed = time.monotonic() - started
        statuses = []
        while (reply := await watch.read()) != grpc.aio.EOF:
            statuses.append(reply.status)
    # It ends at once; NOT_SERVING may or may not get out first (a drain delay lets it).
    assert statuses in ([], [health_pb2.HealthCheckResponse.NOT_SERVING])
    assert elapsed < settings.drain_timeout / 2, "the watcher held the drain to its timeout"


async def test_a_busy_port_is_an_os_error(settings: Settings, core: FakeCore) -> None:
    from dataclasses import replace

    async with running_server(settings, ports=core.ports) as first:
        with pytest.raises(OSError, match="cannot listen for HTTP"):
            async with running_server(
                replace(settings, http_port=first.http_port),
                ports=core.ports,
            ):
                pass
        with pytest.raises(OSError, match="cannot listen for gRPC"):
            async with running_server(
                replace(settings, grpc_port=first.grpc_port),
                ports=core.ports,
            ):
                pass
