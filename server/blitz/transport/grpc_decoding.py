"""grpcio's decoding, made to hand a failure to the handler instead of answering it itself.

grpcio decodes a request before its handler runs and answers one it cannot decode with
UNKNOWN and the decoder's text. Here a failure (or a request past MAX_REQUEST_BYTES)
decodes to an `Undecodable` holding the error every bad input gets (`undecodable`), and
the handler refuses it: Blitz's own handlers after authenticating the call (`Calls`, via
the wire's `request`), those of services that are not Blitz's (health, reflection) before
their behaviour runs (`NotOurs`, an interceptor that wraps their handlers once each).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from blitz.errors import BlitzError
from blitz.transport.gate import MAX_REQUEST_BYTES, request_too_large
from blitz.transport.undecodable import Undecodable, undecodable

__all__ = ["NotOurs", "tolerant"]

# What a failed call is ended with (grpc.py's abort), given the call's context.
Abort = Callable[[Any, BlitzError], Awaitable[Any]]


def tolerant(decode: Callable[[bytes], Any], name: str) -> Callable[[bytes], Any]:
    """`decode`, with a failure (or a request too large) handed on as an `Undecodable`."""

    def decoded(data: bytes) -> Any:
        if len(data) > MAX_REQUEST_BYTES:
            return Undecodable(request_too_large())
        try:
            return decode(data)
        except Exception as exc:
            return Undecodable(undecodable(name, exc))

    return decoded


class NotOurs(grpc.aio.ServerInterceptor):
    """Gives the handlers of services that are not Blitz's a tolerant decoder, and has them
    refuse an `Undecodable` before their behaviour runs. Blitz's own handlers decode
    tolerantly already (grpc.py) and pass as they are."""

    def __init__(self, abort: Abort) -> None:
        self._abort = abort
        # Each method's handler and its tolerant one, made once: the handler is the same
        # object every call (a replaced one is wrapped afresh).
        self._made: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith("/blitz.v1."):
            return handler  # no such method (not kept, whatever names callers make up), or ours
        made = self._made.get(method)
        if made is None or made[0] is not handler:
            made = self._made[method] = (handler, self._checked(handler))
        return made[1]

    def _checked(self, handler: Any) -> Any:
        decode = getattr(handler, "request_deserializer", None)
        if decode is None:
            return handler
        message = getattr(decode, "__self__", None)
        name = getattr(getattr(message, "DESCRIPTOR", None), "full_name", "request")
        handler = handler._replace(request_deserializer=tolerant(decode, name))
        abort = self._abort
        if handler.request_streaming:
            kind = "stream_stream" if handler.response_streaming else "stream_unary"
            behavior = getattr(handler, kind)

            async def requests(iterator: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
                async for request in iterator:
                    if isinstance(request, Undecodable):
                        await abort(context, request.error)
                    yield request

            if inspect.isasyncgenfunction(behavior):

                async def streamed(iterator: Any, context: Any) -> AsyncIterator[Any]:
                    async for response in behavior(requests(iterator, context), context):
                        yield response

                return handler._replace(**{kind: streamed})

            async def called(iterator: Any, context: Any) -> Any:
                return await behavior(requests(iterator, context), context)

            return handler._replace(**{kind: called})
        kind = "unary_stream" if handler.response_streaming else "unary_unary"
        behavior = getattr(handler, kind)
        if inspect.isasyncgenfunction(behavior):

            async def answers(request: Any, context: Any) -> AsyncIterator[Any]:
                if isinstance(request, Undecodable):
                    await abort(context, request.error)
                async for response in behavior(request, context):
                    yield response

            return handler._replace(**{kind: answers})

        async def answer(request: Any, context: Any) -> Any:
            if isinstance(request, Undecodable):
                await abort(context, request.error)
            return await behavior(request, context)

        return handler._replace(**{kind: answer})
