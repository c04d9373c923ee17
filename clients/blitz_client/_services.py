"""Which Blitz service serves each method, from the proto descriptors.

Both transports route a call by it; a method name no service has is refused before
anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from blitz.v1 import (
    hooks_pb2,
    schedules_pb2,
    session_pb2,
    webhooks_pb2,
    workflow_pb2,
    workspace_pb2,
)

__all__ = ["SERVICES", "service_of"]

SERVICES: Mapping[str, str] = {
    method.name: service.name
    for service in (
        session_pb2.DESCRIPTOR.services_by_name["SessionService"],
        workspace_pb2.DESCRIPTOR.services_by_name["WorkspaceService"],
        webhooks_pb2.DESCRIPTOR.services_by_name["WebhookService"],
        workflow_pb2.DESCRIPTOR.services_by_name["WorkflowService"],
        schedules_pb2.DESCRIPTOR.services_by_name["ScheduleService"],
        hooks_pb2.DESCRIPTOR.services_by_name["HookService"],
    )
    for method in service.methods
}
"""Each method's service: "GetSession" -> "SessionService", "ReadFile" -> "WorkspaceService",
"CreateWebhook" -> "WebhookService"."""


def service_of(method: str) -> str:
    """The service that serves `method`; ValueError for a name no service has."""
    try:
        return SERVICES[method]
    except KeyError:
        raise ValueError(f"no Blitz service has a method {method!r}") from None
