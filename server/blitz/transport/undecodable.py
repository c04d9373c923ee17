"""A request that cannot be decoded gets what any bad input gets, on both transports.

grpcio and connectrpc decode a request before a handler sees it, and each reports a failure
its own way: gRPC as UNKNOWN with the exception's text, Connect as INVALID_ARGUMENT without
an ErrorInfo. Both transports hand the failure to `undecodable` instead, so the client gets
INVALID_ARGUMENT with an ErrorInfo whose `field` is the field the decoder named (JSON says
which), or `request` when it named none (a corrupt binary message).
"""

from __future__ import annotations

import re

from blitz.errors import BlitzError, invalid_argument

__all__ = ["undecodable"]

# How protobuf's JSON parser names the field it failed on, outermost first.
_JSON_FIELD = re.compile(r"Failed to parse (\w+) field")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def undecodable(message_name: str, exc: Exception) -> BlitzError:
    """INVALID_ARGUMENT for a request of type `message_name` that failed to decode."""
    path = [_CAMEL_HUMP.sub("_", name).lower() for name in _JSON_FIELD.findall(str(exc))]
    return invalid_argument(
        ".".join(path) or "request", f"the request is not a valid {message_name}: {exc}"
    )
