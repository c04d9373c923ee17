"""CORS on the HTTP port: which other web origins' pages may call Connect and gRPC-Web.

A page on another origin (a dashboard on `http://localhost:5173`, say) may call the port
only when its origin is one of `--cors-origin`; none are by default, so only the port's own
console (same origin, no CORS involved) and non-browser clients call it. The header logic
is Starlette's `CORSMiddleware`, configured here with what Connect and gRPC-Web need
(the lists connect-es's `cors` names, plus `authorization` for the bearer token):

- a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin is
  answered 200 with the methods and headers below; from any other origin, 400, and the
  browser refuses the call;
- an answer to an allowed origin carries `Access-Control-Allow-Origin` and exposes the
  headers a gRPC-Web client reads its status from; an answer to any other origin carries
  no `Access-Control-Allow-Origin`, so the browser withholds it from the page.

A call that reaches the port from any other origin is refused outright, before any
handler (`rebinding`, which also checks the Host a request names); these headers only
tell the browser what it may show the page.

No cookies are involved (a token is a header), so credentials stay off. Nothing here
decides who a caller is: the token does, for every origin alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.middleware.cors import CORSMiddleware

__all__ = ["ALLOWED_HEADERS", "EXPOSED_HEADERS", "with_cors"]

# What a Connect or gRPC-Web client in a browser sends, beside the CORS-safelisted ones.
ALLOWED_HEADERS = (
    "authorization",
    "content-type",
    "connect-protocol-version",
    "connect-timeout-ms",
    "connect-content-encoding",
    "connect-accept-encoding",
    "content-encoding",
    "accept-encoding",
    "grpc-timeout",
    "grpc-accept-encoding",
    "x-grpc-web",
    "x-user-agent",
    # The client's own name for itself (Resolution.client).
    "blitz-client",
)
# What it must read of an answer: gRPC-Web's status (in the headers of a trailers-only
# answer), and the encodings of compressed messages.
EXPOSED_HEADERS = (
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "content-encoding",
    "connect-content-encoding",
)
# Every call is a POST (the port refuses other methods with 405).
_METHODS = ("POST",)
# How long a browser may keep a preflight's answer, in seconds.
_MAX_AGE_S = 7200


def with_cors(app: Any, origins: Sequence[str]) -> Any:
    """`app` answering CORS for `origins`; `app` itself when there are none."""
    if not origins:
        return app
    return CORSMiddleware(
        app,
        allow_origins=list(origins),
        allow_methods=_METHODS,
        allow_headers=ALLOWED_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        allow_credentials=False,
        # An allowed page on a public origin may call a server on this machine's loopback
        # or private network (Chromium asks first): the operator named that origin.
        allow_private_network=True,
        max_age=_MAX_AGE_S,
    )
