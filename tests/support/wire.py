"""The client that end-to-end tests talk through, and how they drive turns with it.

`Wire` is one connection to a running server over gRPC or Connect, made of blitz_client's
own transports, so every test also exercises the SDK's encoding and error decoding: a
failed call raises the SDK's `BlitzError` (code in Connect's spelling, reason, metadata,
message, and the ErrorInfo as sent). `Wire` adds only what tests share on top: methods
called by their proto names, and `create_session`, `run`, `run_all`, `decide`,
`decide_next`. Every byte goes over a socket to a real server; nothing here fakes one.

The helpers below drive a turn to its end (`drive`), answer all its approvals one way
(`decide`, an `on_request`), read up to one event (`until`), follow a session until a turn
finishes (`follow_until_finished`) and check a refusal (`expect_error`).

A test that checks how Decide itself is refused (a missing decision, an oversized field, a
rule that does not cover its request) builds its `DecideRequest` by hand instead.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest

from blitz.server import RunningServer
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz_client import BlitzError
from blitz_client._connect import ConnectTransport
from blitz_client._grpc import GrpcTransport
from blitz_client._requests import decision_value
from blitz_client._transport import Transport

__all__ = [
    "Approval",
    "OnRequest",
    "Wire",
    "decide",
    "drive",
    "expect_error",
    "follow_until_finished",
    "open_wire",
    "until",
]


Approval = t.TurnEvent | t.ApprovalRequest | str
"""What `Wire.decide` answers: an `approval_request` event, its ApprovalRequest, or its
request_id."""


def _request_id(approval: Approval) -> str:
    if isinstance(approval, str):
        return approval
    if isinstance(approval, t.TurnEvent):
        assert approval.HasField("approval_request"), f"not an approval request: {approval}"
        return approval.approval_request.request_id
    return approval.request_id


class Wire:
    """One client of a running server; methods named as in SessionService and WorkspaceService.

    `transport` is the SDK's own, for a test that wants it directly.
    """

    def __init__(self, name: str, transport: Transport) -> None:
        self.name = name
        self.transport = transport

    async def call(self, method: str, request: Any) -> Any:
        """A unary call ("GetSession", "ReadFile", ...); raises BlitzError."""
        return await self.transport.unary(method, request)

    def stream(self, method: str, request: Any) -> AsyncGenerator[t.TurnEvent, None]:
        """A server stream ("RunTurn", "Watch"); raises BlitzError. Close it with aclose()."""
        return self.transport.stream(method, request)

    async def close(self) -> None:
        await self.transport.close()

    # Conveniences used across tests

    async def create_session(self, **fields: Any) -> s.Session:
        return await self.call("CreateSession", s.CreateSessionRequest(**fields))

    def run(
        self, session_id: str, text: str = "", turn_id: str = "", **turn: Any
    ) -> AsyncGenerator[t.TurnEvent, None]:
        """RunTurn with a Turn of `text` and the given Turn fields, as proto values."""
        request = s.RunTurnRequest(
            session_id=session_id, turn=t.Turn(text=text, **turn), turn_id=turn_id
        )
        return self.stream("RunTurn", request)

    async def run_all(self, session_id: str, text: str, **turn: Any) -> list[t.TurnEvent]:
        return [e async for e in self.run(session_id, text, **turn)]

    async def decide(
        self,
        session_id: str,
        approval: Approval,
        decision: int | str,
        *,
        reason: str = "",
        command: str = "",
        interrupt: bool = False,
        rule: t.RuleMatch | None = None,
    ) -> None:
        """Decide one approval request: `decision` is a `t.DECISION_...` value or "once",
        "session", "always", "deny"; the keywords are DecideRequest's fields."""
        request = s.DecideRequest(
            session_id=session_id,
            request_id=_request_id(approval),
            decision=decision_value(decision),  # type: ignore[arg-type]  # an int of the enum
            reason=reason,
            command=command,
            interrupt=interrupt,
            rule=rule,
        )
        await self.call("Decide", request)

    async def decide_next(
        self,
        stream: AsyncIterator[t.TurnEvent],
        session_id: str,
        decision: int | str,
        **fields: Any,
    ) -> t.TurnEvent:
        """Read `stream` up to its next approval request and decide it (as `decide`); that
        event. The stream stays open: read on, or close it."""
        asked = await until(stream, "approval_request")
        await self.decide(session_id, asked, decision, **fields)
        return asked


def open_wire(kind: str, server: RunningServer, headers: Mapping[str, str] | None = None) -> Wire:
    """A client of `server` over "grpc" (its gRPC port) or "connect" (its HTTP port), sending
    `headers` (gRPC metadata) with every call."""
    if kind == "grpc":
        return Wire(kind, GrpcTransport(server.grpc_target, headers=headers or {}, tls=False))
    return Wire(kind, ConnectTransport(server.http_url, headers=headers or {}))


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


def decide(wire: Wire, session_id: str, decision: int | str, **extra: Any) -> OnRequest:
    """An `on_request` for `drive` that answers every approval request with `decision` (and
    `extra`, as `Wire.decide`). To decide one request, call `wire.decide`."""

    async def on_request(event: t.TurnEvent) -> None:
        await wire.decide(session_id, event, decision, **extra)

    return on_request


async def until(stream: AsyncIterator[t.TurnEvent], kind: str) -> t.TurnEvent:
    """Read `stream` up to its first event of `kind` ("approval_request", ...); that event.

    The stream stays open: read on, or close it.
    """
    async for event in stream:
        if event.HasField(kind):
            return event
    raise AssertionError(f"the stream ended without a {kind} event")


async def follow_until_finished(
    wire: Wire, session_id: str, after_seq: int = 0, on_request: OnRequest | None = None
) -> list[t.TurnEvent]:
    """Watch the session live from `after_seq` up to the next `finished` event, answering
    each approval or question with `on_request`."""
    events = []
    watch = wire.stream(
        "Watch", s.WatchRequest(session_id=session_id, after_seq=after_seq, follow=True)
    )
    try:
        async for event in watch:
            events.append(event)
            if on_request and event.WhichOneof("kind") in ("approval_request", "question"):
                await on_request(event)
            if event.HasField("finished"):
                break
    finally:
        await watch.aclose()
    return events


async def expect_error(call: Awaitable[Any], code: str, reason: str) -> BlitzError:
    """Await `call`, which must fail with `code` and an ErrorInfo of `reason` and a message."""
    with pytest.raises(BlitzError) as raised:
        await call
    error = raised.value
    assert error.code == code, error
    assert error.info is not None and error.info.reason, "every failed call carries an ErrorInfo"
    assert error.reason == reason, error
    assert error.info.message, error
    return error
