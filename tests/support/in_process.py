"""An in-process transport: the core's ports called directly, with no socket and no wire.

`InProcess` implements blitz_client's `Transport`, so a `Wire` made of it runs the same tests
as one over gRPC or Connect, against a whole core (`blitz.assembly.open_core`) on a real
SQLite file. A failure reaches the test as the SDK's `BlitzError`, made the way the wires
make theirs: the canonical code of the reason's status, and the ErrorInfo whole. Most
behaviour tests run this way (fast); the parity suite runs the same calls over both wires.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from blitz.assembly import open_core
from blitz.config import Settings
from blitz.errors import BlitzError as CoreError
from blitz.ports import CallContext, ServicePorts
from blitz.transport.methods import SERVICES
from blitz.transport.unexpected import unexpected_as_internal
from blitz.v1 import turn_pb2
from blitz_client import BlitzError
from blitz_client._services import service_of
from support.wire import Wire

__all__ = ["InProcess", "OpenCore", "in_process"]


def _snake(method: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower()


def _client_error(error: CoreError) -> BlitzError:
    return BlitzError.from_info(error.status.value, error.to_proto(), error.message)


class InProcess:
    """Every service as its port serves it, in this process; `ports` as the assembly
    hands them to the transports (each by the service's full name)."""

    def __init__(self, ports: ServicePorts, ctx: CallContext | None = None) -> None:
        self._ports: dict[str, Any] = {
            service.name: ports[service.full_name]
            for service in SERVICES
            if service.full_name in ports
        }
        self._ctx = ctx or CallContext()

    def _method(self, method: str) -> Any:
        return getattr(self._ports[service_of(method)], _snake(method))

    async def unary(self, method: str, request: Any) -> Any:
        try:
            with unexpected_as_internal("call", rpc=method, transport="in-process"):
                return await self._method(method)(request, self._ctx)
        except CoreError as exc:
            raise _client_error(exc) from None

    async def stream(self, method: str, request: Any) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        events: AsyncIterator[turn_pb2.TurnEvent] = self._method(method)(request, self._ctx)
        try:
            with unexpected_as_internal("stream", rpc=method, transport="in-process"):
                async for event in events:
                    yield event
        except CoreError as exc:
            raise _client_error(exc) from None
        finally:
            await events.aclose()  # type: ignore[attr-defined]

    async def close(self) -> None:
        pass


@asynccontextmanager
async def in_process(settings: Settings, ctx: CallContext | None = None) -> AsyncIterator[Wire]:
    """A whole core on `settings` (its SQLite file, its workspaces), and a client of it."""
    async with open_core(settings) as core:
        yield Wire("core", InProcess(core.ports, ctx))


OpenCore = Callable[..., AbstractAsyncContextManager[Wire]]
"""Opens a core with settings overridden by keyword (the `opened` fixture)."""
