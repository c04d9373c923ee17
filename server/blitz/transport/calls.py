"""The one adapter both wires use: an RPC's call, from the wire's request to the port's answer.

For every RPC (`methods.py`) it makes one handler, the same for gRPC and Connect, that
admits the call through the gate, builds its `CallContext`, authenticates it (the one
hook where a token is checked; none when the server needs no token), reads the request,
calls the port method and closes a stream's iterator however it ends. An exception that
is not a `BlitzError` becomes INTERNAL (`unexpected`). A wire supplies only what differs
(`Wire`): how it makes a call's context, how it reads a request (a request that failed to
decode is refused here, after authentication, so a caller without a token learns nothing
of what the body should be), and how it fails a call with a `BlitzError`. A stream gives
way to the loop every few messages, so that a replay into a connection that is gone
(whose writes all return at once) neither holds the loop nor outlives the disconnect.

Every call is counted here, once, whichever wire it came by (`metrics.RpcMetrics`): its
start, its end with its code as gRPC names it (OK, or the error's: a call that leaves by
cancellation, a client gone, is Canceled) and its time; a stream's messages in steps of
the give-way count. A call the wire refuses before any handler (an unknown method, a
broken envelope) is not counted.

No business logic here, and no wire format.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, NoReturn, Protocol

from google.protobuf.message import Message

from blitz import metrics
from blitz.errors import BlitzError, Status
from blitz.ports import Authenticate, CallContext
from blitz.transport.gate import CallGate
from blitz.transport.methods import Method
from blitz.transport.unexpected import unexpected_as_internal

__all__ = ["Calls", "Wire"]

Handler = Callable[[Any, Any], Any]
# A stream gives way to the loop after this many messages, so that however fast its
# source (a replay from the store) and its sink (a socket that is gone and takes every
# write at once), other calls go on and a disconnect is noticed within that many.
_GIVE_WAY_EVERY = 32
# Each status's code as gRPC's Prometheus interceptors name it (Go's names: Canceled).
_CODES = {status: "".join(w.capitalize() for w in status.value.split("_")) for status in Status}
_OK = "OK"
_CANCELED = _CODES[Status.CANCELLED]


class Wire(Protocol):
    """What one wire supplies to the adapter; `native` is its own call object."""

    name: str

    def context(self, native: Any) -> CallContext:
        """The call's context as the wire saw it (deadline, headers, peer)."""
        ...

    def request(self, received: Any) -> Message:
        """The request the wire decoded; raises the BlitzError of one that did not decode."""
        ...

    async def fail(self, native: Any, error: BlitzError) -> NoReturn:
        """End the call with `error`, mapped to the wire."""
        ...


class Calls:
    """Makes each RPC's handler over the ports, for one wire."""

    def __init__(
        self,
        ports: Mapping[str, object],
        gate: CallGate,
        wire: Wire,
        *,
        authenticate: Authenticate | None = None,
    ) -> None:
        """`ports`: the object serving each service, by the service's full name."""
        self._ports = ports
        self._gate = gate
        self._wire = wire
        self._authenticate = authenticate

    def handler(self, method: Method) -> Handler:
        """The handler of `method`: `(request, native) -> response`, or an async generator
        of responses for a stream (grpc.aio tells a stream by its handler being one)."""
        call = getattr(self._ports[method.service], method.port_method)
        return self._stream(method, call) if method.streaming else self._unary(method, call)

    async def _context(self, native: Any) -> CallContext:
        ctx = self._wire.context(native)
        return ctx if self._authenticate is None else await self._authenticate(ctx)

    def _unary(self, method: Method, call: Callable[[Any, CallContext], Awaitable[Any]]) -> Handler:
        gate, wire, rpc = self._gate, self._wire, method.name
        counted = metrics.RpcMetrics(method.service, rpc, streaming=False)

        async def unary(received: Any, native: Any) -> Any:
            counted.started()
            began = time.perf_counter()
            code = _CANCELED  # unless it leaves with an answer or an error
            try:
                # fail() raises, so it is called outside the try that catches the core's errors.
                try:
                    with (
                        unexpected_as_internal("call", rpc=rpc, transport=wire.name),
                        gate.unary(),
                    ):
                        ctx = await self._context(native)
                        response = await call(wire.request(received), ctx)
                    code = _OK
                    counted.sent(1)
                    return response
                except BlitzError as exc:
                    error = exc
                    code = _CODES[exc.status]
                await wire.fail(native, error)
            finally:
                counted.handled(code, time.perf_counter() - began)

        unary.__name__ = unary.__qualname__ = rpc
        return unary

    def _stream(
        self, method: Method, call: Callable[[Any, CallContext], AsyncIterator[Any]]
    ) -> Handler:
        gate, wire, rpc = self._gate, self._wire, method.name
        counted = metrics.RpcMetrics(method.service, rpc, streaming=True)

        async def stream(received: Any, native: Any) -> AsyncIterator[Any]:
            counted.started()
            began = time.perf_counter()
            code = _CANCELED  # unless it ends or fails: its client went away
            sent = 0
            events: AsyncIterator[Any] | None = None
            try:
                try:
                    with (
                        unexpected_as_internal("stream", rpc=rpc, transport=wire.name),
                        gate.stream(),
                    ):
                        ctx = await self._context(native)
                        events = call(wire.request(received), ctx)
                        async for event in events:
                            yield event
                            sent += 1
                            if sent % _GIVE_WAY_EVERY == 0:
                                counted.sent(_GIVE_WAY_EVERY)
                                await asyncio.sleep(0)
                        code = _OK
                        return
                except BlitzError as exc:
                    error = exc
                    code = _CODES[exc.status]
                finally:
                    if events is not None and (aclose := getattr(events, "aclose", None)):
                        await aclose()
                await wire.fail(native, error)
            finally:
                counted.sent(sent % _GIVE_WAY_EVERY)
                counted.handled(code, time.perf_counter() - began)

        stream.__name__ = stream.__qualname__ = rpc
        return stream
