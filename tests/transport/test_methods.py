"""Every RPC of the service descriptors is a port method, and both wires serve it.

The method tables are read from the descriptors (blitz.transport.methods), so an RPC
added to the proto and the port is served by gRPC and Connect with no transport change;
these tests hold that: nothing a descriptor names is missing from the ports, the core or
either wire, and neither wire serves anything else.
"""

from __future__ import annotations

import inspect
import json
import struct

import grpc
import httpx
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from blitz.core import (
    HookCore,
    ScheduleCore,
    SessionCore,
    WebhookCore,
    WorkflowCore,
    WorkspaceCore,
)
from blitz.ports import (
    HookPort,
    SchedulePort,
    SessionPort,
    WebhookPort,
    WorkflowPort,
    WorkspacePort,
)
from blitz.server import RunningServer
from blitz.transport.methods import (
    HOOK_SERVICE,
    SCHEDULE_SERVICE,
    SERVICES,
    SESSION_SERVICE,
    WEBHOOK_SERVICE,
    WORKFLOW_SERVICE,
    WORKSPACE_SERVICE,
    Method,
    methods_of,
)

PORTS = {
    SESSION_SERVICE.full_name: (SessionPort, SessionCore),
    WORKSPACE_SERVICE.full_name: (WorkspacePort, WorkspaceCore),
    WEBHOOK_SERVICE.full_name: (WebhookPort, WebhookCore),
    WORKFLOW_SERVICE.full_name: (WorkflowPort, WorkflowCore),
    SCHEDULE_SERVICE.full_name: (SchedulePort, ScheduleCore),
    HOOK_SERVICE.full_name: (HookPort, HookCore),
}
METHODS = [m for service in SERVICES for m in methods_of(service)]


def _id(method: Method) -> str:
    return method.name


@pytest.mark.parametrize("method", METHODS, ids=_id)
def test_each_rpc_is_a_method_of_its_port_and_of_the_core(method: Method) -> None:
    port, core = PORTS[method.service]
    for implementer in (port, core):
        function = getattr(implementer, method.port_method, None)
        assert function is not None, f"{implementer.__name__} has no {method.port_method}"
        # A stream's method returns an iterator; a unary one is awaited.
        assert inspect.iscoroutinefunction(function) is not method.streaming


def test_the_ports_have_no_method_the_services_do_not_name() -> None:
    for port, _ in PORTS.values():
        named = {m.port_method for m in METHODS}
        public = {name for name in vars(port) if not name.startswith("_")}
        assert public <= named


async def test_grpc_serves_every_rpc_and_reflection_lists_them(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.grpc_target) as channel:
        for method in METHODS:
            code = grpc.StatusCode.OK
            try:
                if method.streaming:
                    async for _ in channel.unary_stream(method.path)(b""):
                        pass
                else:
                    await channel.unary_unary(method.path)(b"")
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
            # Answered by the double (fake_core.py), INTERNAL for the calls it does not play.
            assert code != grpc.StatusCode.UNIMPLEMENTED, method.path
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel.unary_unary(f"/{SESSION_SERVICE.full_name}/NoSuchCall")(b"")
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED

        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        for service in SERVICES:
            asked = reflection_pb2.ServerReflectionRequest(file_containing_symbol=service.full_name)
            [answer] = [a async for a in stub.ServerReflectionInfo(iter([asked]))]
            assert answer.file_descriptor_response.file_descriptor_proto


async def test_connect_serves_every_rpc_and_nothing_else(server: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=server.http_url) as client:
        for method in METHODS:
            if method.streaming:
                body = struct.pack(">BI", 0, 2) + b"{}"
                answer = await client.post(
                    method.path, content=body, headers={"content-type": "application/connect+json"}
                )
                assert answer.status_code == 200, method.path
                end = _end_of_stream(answer.content)
                assert end.get("error", {}).get("code") != "unimplemented", method.path
            else:
                answer = await client.post(
                    method.path, content=b"{}", headers={"content-type": "application/json"}
                )
                # Answered by the double: its own answer, or INTERNAL for the calls it does
                # not play.
                assert answer.json().get("code") != "unimplemented", method.path
        unknown = await client.post(
            f"/{SESSION_SERVICE.full_name}/NoSuchCall",
            content=b"{}",
            headers={"content-type": "application/json"},
        )
        assert unknown.status_code == 404


def _end_of_stream(body: bytes) -> dict[str, dict[str, str]]:
    """The end-of-stream message of a Connect stream's body (its last envelope)."""
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        message, body = body[5 : 5 + size], body[5 + size :]
        if flags & 0x02:
            end: dict[str, dict[str, str]] = json.loads(message)
            return end
    raise AssertionError("the stream has no end-of-stream message")
