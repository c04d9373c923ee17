"""Test support: one interface over the real grpcio and connectrpc clients, and settings.

`Wire` only smooths call names and error shapes; every byte goes over a socket to a real
server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
from connectrpc.errors import ConnectError
from grpc_status import rpc_status

from blitz.config import Settings
from blitz.v1 import session_connect, session_pb2_grpc, workspace_connect, workspace_pb2_grpc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t


class WireError(Exception):
    """A failed call as either transport reports it: canonical code and ErrorInfo."""

    def __init__(self, code: str, info: t.ErrorInfo | None, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.info = info


def _grpc_error(exc: grpc.aio.AioRpcError) -> WireError:
    info = None
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    if status is not None:
        for detail in status.details:
            if detail.Is(t.ErrorInfo.DESCRIPTOR):
                info = t.ErrorInfo()
                detail.Unpack(info)
    return WireError(exc.code().name.lower(), info, exc.details() or "")


def _connect_error(exc: ConnectError) -> WireError:
    info = None
    for detail in exc.details:
        if detail.type_name == "blitz.v1.ErrorInfo":
            info = t.ErrorInfo.FromString(detail.message_bytes)
    return WireError(exc.code.value, info, exc.message)


# Methods of WorkspaceService; every other name is a SessionService method.
WORKSPACE_METHODS = frozenset({"UploadImage", "ListFiles", "ReadFile"})


class Wire:
    """One client of a running server; methods named as in SessionService."""

    name = ""

    async def call(self, method: str, request: Any) -> Any:
        raise NotImplementedError

    def stream(self, method: str, request: Any) -> AsyncIterator[t.TurnEvent]:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    # Conveniences used across tests
    async def create_session(self, **fields: Any) -> s.Session:
        return await self.call("CreateSession", s.CreateSessionRequest(**fields))

    def run(self, session_id: str, text: str = "", turn_id: str = "", **turn: Any):
        return self.stream(
            "RunTurn",
            s.RunTurnRequest(
                session_id=session_id, turn=t.Turn(text=text, **turn), turn_id=turn_id
            ),
        )

    async def run_all(self, session_id: str, text: str, **turn: Any) -> list[t.TurnEvent]:
        return [e async for e in self.run(session_id, text, **turn)]


class GrpcWire(Wire):
    name = "grpc"

    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = session_pb2_grpc.SessionServiceStub(self.channel)
        self.workspace = workspace_pb2_grpc.WorkspaceServiceStub(self.channel)

    async def call(self, method: str, request: Any) -> Any:
        stub = self.workspace if method in WORKSPACE_METHODS else self.stub
        try:
            return await getattr(stub, method)(request)
        except grpc.aio.AioRpcError as exc:
            raise _grpc_error(exc) from None

    async def stream(self, method: str, request: Any) -> AsyncIterator[t.TurnEvent]:
        call = getattr(self.stub, method)(request)
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as exc:
            raise _grpc_error(exc) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        await self.channel.close()


def _snake(method: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in method).lstrip("_")


class ConnectWire(Wire):
    name = "connect"

    def __init__(self, url: str) -> None:
        self.client = session_connect.SessionServiceClient(url)
        self.workspace = workspace_connect.WorkspaceServiceClient(url)

    async def call(self, method: str, request: Any) -> Any:
        client = self.workspace if method in WORKSPACE_METHODS else self.client
        try:
            return await getattr(client, _snake(method))(request)
        except ConnectError as exc:
            raise _connect_error(exc) from None

    async def stream(self, method: str, request: Any) -> AsyncIterator[t.TurnEvent]:
        events = getattr(self.client, _snake(method))(request)
        try:
            async for event in events:
                yield event
        except ConnectError as exc:
            raise _connect_error(exc) from None
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()

    async def close(self) -> None:
        await self.client.close()
        await self.workspace.close()
        # Let pyqwest's threads drop their connections before the test process may exit
        # (see blitz_client's ConnectTransport.close).
        await asyncio.sleep(0.05)


def open_wire(kind: str, server: Any) -> Wire:
    """A client of `server` (a RunningServer) over "grpc" or "connect"."""
    return GrpcWire(server.grpc_target) if kind == "grpc" else ConnectWire(server.http_url)


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    base = Settings(
        grpc_port=0,
        http_port=0,
        data_dir=data_dir,
        database=str(data_dir / "blitz.db"),
        workspace_root=data_dir / "workspaces",
        log_format="console",
        drain_timeout=2.0,
        command_timeout=20.0,
    )
    return replace(base, **overrides)


# Driving turns

OnRequest = Callable[[t.TurnEvent], Awaitable[None]]


async def drive(
    wire: Wire, session_id: str, text: str, on_request: OnRequest | None = None, **turn: Any
) -> list[t.TurnEvent]:
    """Run a turn to its end, answering each approval or question with `on_request`."""
    events = []
    async for event in wire.run(session_id, text, **turn):
        events.append(event)
        if on_request and event.WhichOneof("kind") in ("approval_request", "question"):
            await on_request(event)
    return events


def shape(events: list[t.TurnEvent]) -> tuple[str, str, list[t.TurnEvent]]:
    """What a reader must get whatever the coalescing: all streamed text, every other event.

    Partial chunks may arrive merged (a merged event carries its last chunk's seq), so two
    deliveries of the same log compare equal by this, not event by event.
    """

    def streamed(thought: bool) -> str:
        return "".join(
            e.text.text
            for e in events
            if e.HasField("text") and e.text.partial and e.text.thought == thought
        )

    # Compared as messages: serialized Structs (maps) have no fixed byte order.
    others = [e for e in events if not (e.HasField("text") and e.text.partial)]
    return streamed(False), streamed(True), others


def kinds(events: list[t.TurnEvent]) -> list[str]:
    return [e.WhichOneof("kind") or "" for e in events]


def decide(wire: Any, session_id: str, decision: int, **extra: Any) -> OnRequest:
    async def on_request(event: t.TurnEvent) -> None:
        await wire.call(
            "Decide",
            s.DecideRequest(
                session_id=session_id,
                request_id=event.approval_request.request_id,
                decision=decision,
                **extra,
            ),
        )

    return on_request
