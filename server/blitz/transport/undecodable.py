"""A request that cannot be decoded gets what any bad input gets, on both transports.

grpcio and connectrpc decode a request before a handler sees it, and each reports a failure
its own way: gRPC as UNKNOWN with the exception's text, Connect as INVALID_ARGUMENT without
an ErrorInfo. Both transports hand the failure to `undecodable` instead, so the client gets
INVALID_ARGUMENT with an ErrorInfo whose `field` is the field the decoder named (JSON says
which, and a JSON field the message does not have is refused by name: a misspelt `titel`
would otherwise make an untitled session), or `request` when it named none (a corrupt
binary message, where unknown fields are kept, as protobuf's binary form requires). The
message is ours:
the decoder's own text goes to the log, never to the client. The failure reaches the
handler as an `Undecodable` in the request's place, and the handler refuses it once the
call is authenticated: a caller without a token learns nothing of what a body should be.
"""

from __future__ import annotations

import re

import structlog

from blitz.errors import BlitzError, invalid_argument

__all__ = ["Undecodable", "undecodable"]

log = structlog.get_logger(__name__)

# How protobuf's JSON parser names the field it failed on, outermost first.
_JSON_FIELD = re.compile(r"Failed to parse (\w+) field")
# How it names a JSON field the message does not have.
_UNKNOWN_FIELD = re.compile(r'has no field named "([^"]{1,100})"')
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class Undecodable:
    """What a request that failed to decode arrives as; its handler refuses it with `error`."""

    __slots__ = ("error",)

    def __init__(self, error: BlitzError) -> None:
        self.error = error


def undecodable(message_name: str, exc: Exception) -> BlitzError:
    """INVALID_ARGUMENT for a request of type `message_name` that failed to decode."""
    text = str(exc)
    path = [_CAMEL_HUMP.sub("_", name).lower() for name in _JSON_FIELD.findall(text)]
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown is not None:
        path.append(unknown.group(1))
    field = ".".join(path) or "request"
    log.info("request_undecodable", message=message_name, field=field, error=text)
    if unknown is not None:
        why = f"{field} is not one of its fields"
    elif path:
        why = f"{field} has a value of the wrong type or form"
    else:
        why = "it does not decode"
    return invalid_argument(field, f"the request is not a valid {message_name}: {why}")
