"""Every RPC Blitz serves, read from the service descriptors: the one list both wires serve.

Nothing here names an RPC. A method of `blitz.v1.SessionService` is served by the port
method of the same name in snake_case (`RunTurn` by `SessionPort.run_turn`), on gRPC and
Connect alike, so adding an RPC touches the proto, the port and the core, and no
transport. Every stream is server-streaming (docs/protocol.md), so a method is either
unary or a stream of responses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from blitz.v1 import (
    hooks_pb2,
    schedules_pb2,
    session_pb2,
    webhooks_pb2,
    workflow_pb2,
    workspace_pb2,
)

__all__ = [
    "HOOK_SERVICE",
    "SCHEDULE_SERVICE",
    "SERVICES",
    "SESSION_SERVICE",
    "WEBHOOK_SERVICE",
    "WORKFLOW_SERVICE",
    "WORKSPACE_SERVICE",
    "Method",
    "methods_of",
]

SESSION_SERVICE = session_pb2.DESCRIPTOR.services_by_name["SessionService"]
WORKSPACE_SERVICE = workspace_pb2.DESCRIPTOR.services_by_name["WorkspaceService"]
WEBHOOK_SERVICE = webhooks_pb2.DESCRIPTOR.services_by_name["WebhookService"]
WORKFLOW_SERVICE = workflow_pb2.DESCRIPTOR.services_by_name["WorkflowService"]
SCHEDULE_SERVICE = schedules_pb2.DESCRIPTOR.services_by_name["ScheduleService"]
HOOK_SERVICE = hooks_pb2.DESCRIPTOR.services_by_name["HookService"]
# The services behind the ports, in the order the ports are handed over (server.py).
SERVICES: tuple[ServiceDescriptor, ...] = (
    SESSION_SERVICE,
    WORKSPACE_SERVICE,
    WEBHOOK_SERVICE,
    WORKFLOW_SERVICE,
    SCHEDULE_SERVICE,
    HOOK_SERVICE,
)

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class Method:
    """One RPC: where it is served, what it takes and gives, and the port method behind it."""

    service: str
    name: str
    port_method: str
    request: type[Message]
    response: type[Message]
    streaming: bool
    idempotency: int

    @property
    def path(self) -> str:
        """`/blitz.v1.SessionService/RunTurn`: gRPC's method name and Connect's URL path."""
        return f"/{self.service}/{self.name}"


def methods_of(service: ServiceDescriptor) -> tuple[Method, ...]:
    """The service's RPCs, in the proto's order."""
    return tuple(_method(service, m) for m in service.methods)


def _method(service: ServiceDescriptor, m: MethodDescriptor) -> Method:
    if m.client_streaming:  # pragma: no cover - the protocol has none (a browser can't)
        raise ValueError(f"{m.full_name}: client streams are not served")
    return Method(
        service=service.full_name,
        name=m.name,
        port_method=_HUMP.sub("_", m.name).lower(),
        request=GetMessageClass(m.input_type),
        response=GetMessageClass(m.output_type),
        streaming=m.server_streaming,
        idempotency=m.GetOptions().idempotency_level,
    )
