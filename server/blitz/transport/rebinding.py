"""Whom the HTTP port answers: the host names it serves, and pages of the origins it allows.

DNS rebinding: a page on `attacker.example` has its name re-resolved to 127.0.0.1, and
the browser then calls this port as that page's own origin, so CORS never applies; with
no token (the default on loopback) the page may run commands. Two checks stop it, in
front of every handler, the console's page and the probes included, tokens or not:

- **Host.** A request whose `Host` is not a name this port serves is answered 400. Served:
  `localhost` and `*.localhost` (browsers resolve those to loopback themselves), any IP
  address, `--public-url`'s host, and the patterns of `--allowed-host` (as Starlette's
  `TrustedHostMiddleware` takes them: `blitz.example.com`, `*.example.com`, `*`). An IP
  address is served whatever it is because rebinding needs a name: a browser that sends
  `Host: 10.0.0.5` connected to 10.0.0.5 itself, and the page calling it came from there
  too. So a LAN or container client by address, a kubelet probing the pod's IP, a load
  balancer's health check, all pass without configuration; a client that reaches the port
  by a DNS name (`blitz:8080` in Compose, `blitz.example.com`) is named with a flag.
- **Origin.** A browser's request (it carries `Origin`, or `Sec-Fetch-Site: cross-site`)
  from an origin that is neither the port's own nor one of `--cors-origin` is answered
  403; so is `Origin: null` (a sandboxed frame, a file, a redirect across origins). The
  port's own origin is the one whose `host[:port]` is the request's `Host` (already a
  served name), whatever its scheme, as Jupyter compares them: behind a proxy that ends
  TLS the port hears `http` while the page is `https`. `--public-url`'s origin is its
  own too, for a proxy that rewrites `Host`.

Two requests pass the Origin check on purpose. A CORS preflight (`OPTIONS`) runs nothing:
the CORS layer answers it for an allowed origin, and for any other it is refused as a
method the port does not serve. A top-level navigation to the page (`GET`, mode
`navigate`, destination `document`) is cross-site whenever someone follows a link to the
console from elsewhere (a webhook's link in a chat, say): the page holds no data, its own
calls are same-origin, and it refuses to be framed (`frame-ancestors 'none'`).

A refusal is shaped for what asked: Connect's JSON error body, a gRPC-Web status in the
headers of a trailers-only answer, or text for anything else. Its ErrorInfo says which
flag would let it through; what the request sent goes to the log.

Nothing here decides who a caller is (the token does), nor reads `X-Forwarded-*`.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Sequence
from typing import Any

import structlog

from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.transport.connect import CONNECT_CODES
from blitz.transport.connect_errors import send_grpc_web, send_json
from blitz.transport.cors import with_cors
from blitz.transport.http import Receive, Scope, Send

__all__ = ["DEFAULT_HOSTS", "ServedHosts", "guarded"]

log = structlog.get_logger(__name__)

# Names served without configuration, beside every IP address.
DEFAULT_HOSTS = ("localhost", "*.localhost")
# The most of what a client sent that a refusal repeats.
_SHOWN = 100
_DEFAULT_PORTS = {"http": "80", "https": "443"}


class ServedHosts:
    """The host names a port answers to: any IP address, and names matching `patterns`."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self._patterns = tuple(dict.fromkeys(p.lower().removesuffix(".") for p in patterns))

    def serves(self, name: str) -> bool:
        """Whether `name` (a Host header's name, no port, no brackets) is served."""
        if _is_address(name):
            return True
        for pattern in self._patterns:
            if pattern == "*" or name == pattern:
                return True
            if pattern.startswith("*.") and name.endswith(pattern[1:]):
                return True
        return False


def guarded(
    app: Any,
    *,
    allowed_hosts: Sequence[str],
    cors_origins: Sequence[str],
    public_url: str = "",
) -> Any:
    """`app` behind the Host check, then CORS for `cors_origins`, then the Origin check."""
    hosts = [*DEFAULT_HOSTS, *allowed_hosts]
    origins = list(cors_origins)
    if public_url:
        parts = urllib.parse.urlsplit(public_url)
        if parts.hostname:
            hosts.append(parts.hostname)
        origins.append(f"{parts.scheme}://{parts.netloc}")
    allowed = {key for key in map(_origin_key, origins) if key is not None}
    inner = _TrustedOrigins(app, allowed)
    return _TrustedHosts(with_cors(inner, cors_origins), ServedHosts(hosts))


class _TrustedHosts:
    """Answers 400 to a request whose Host is not a served name (see the module doc)."""

    def __init__(self, app: Any, hosts: ServedHosts) -> None:
        self._app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        host = _header(scope, b"host")
        name = _host_name(host)
        if name is not None and self._hosts.serves(name):
            await self._app(scope, receive, send)
            return
        log.info("request_refused", why="host", host=host[:_SHOWN], path=scope["path"][:_SHOWN])
        error = invalid_argument(
            "host",
            f"this server does not answer to the host {host[:_SHOWN]!r}: name it with"
            " --allowed-host or --public-url (a defence against DNS rebinding)",
        )
        await _refuse(scope, send, 400, error)


class _TrustedOrigins:
    """Answers 403 to a browser's request from a foreign origin (see the module doc)."""

    def __init__(self, app: Any, allowed: set[str]) -> None:
        self._app = app
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._admits(scope):
            await self._app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        site = _header(scope, b"sec-fetch-site")
        log.info(
            "request_refused",
            why="origin",
            origin=origin[:_SHOWN],
            sec_fetch_site=site[:_SHOWN],
            path=scope["path"][:_SHOWN],
        )
        shown = repr(origin[:_SHOWN]) if origin else "another site"
        error = BlitzError(
            Reason.PERMISSION_DENIED,
            f"requests from pages of {shown} are refused: it is neither this server's own"
            " origin nor one of --cors-origin",
            {"origin": origin[:_SHOWN]} if origin else {"sec_fetch_site": site[:_SHOWN]},
        )
        await _refuse(scope, send, 403, error)

    def _admits(self, scope: Scope) -> bool:
        method = scope["method"]
        if method == "OPTIONS" and _header(scope, b"access-control-request-method"):
            return True  # a preflight: see the module doc
        origin = _header(scope, b"origin")
        if origin:
            key = _origin_key(origin)
            if key is None:  # "null", or not an origin at all
                return False
            return key in self._allowed or _is_own(origin, _header(scope, b"host"))
        if _header(scope, b"sec-fetch-site").lower() != "cross-site":
            return True  # not a browser's, or a browser's from this site
        return (
            method in {"GET", "HEAD"}
            and _header(scope, b"sec-fetch-mode").lower() == "navigate"
            and _header(scope, b"sec-fetch-dest").lower() in {"document", ""}
        )


def _is_own(origin: str, host: str) -> bool:
    """Whether `origin`'s host[:port] is the request's Host (whatever its scheme)."""
    netloc = urllib.parse.urlsplit(origin).netloc.lower()
    return _authority(netloc) == _authority(host.strip().lower())


def _authority(netloc: str) -> tuple[str, str] | None:
    """A Host header or an origin's netloc as (name, port); None if it is neither."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return None
        name, rest = netloc[1:end], netloc[end + 1 :]
        if not _is_address(name):
            return None
    else:
        name, colon, port = netloc.partition(":")
        rest = colon + port
    if rest and not (rest[0] == ":" and rest[1:].isdigit() and len(rest) <= 6):
        return None
    name = name.removesuffix(".")
    return (name, rest[1:]) if name else None


def _host_name(host: str) -> str | None:
    """The name in a Host header (lower case, no port, no brackets); None if malformed."""
    authority = _authority(host.strip().lower())
    return authority[0] if authority else None


def _origin_key(origin: str) -> str | None:
    """`scheme://name[:port]` as browsers serialize it (default port left out); None for
    `null` or anything that is not an origin."""
    try:
        parts = urllib.parse.urlsplit(origin.strip().lower())
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or parts.path or parts.query or parts.fragment:
        return None
    authority = _authority(parts.netloc)
    if authority is None or "@" in parts.netloc:
        return None
    name, port = authority
    shown = f"[{name}]" if ":" in name else name
    if port and port != _DEFAULT_PORTS[parts.scheme]:
        shown += ":" + port
    return f"{parts.scheme}://{shown}"


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _header(scope: Scope, name: bytes) -> str:
    """The first value of header `name` ("" when absent)."""
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


async def _refuse(scope: Scope, send: Send, status: int, error: BlitzError) -> None:
    """The refusal, shaped for gRPC-Web, Connect (any POST) or anything else (text)."""
    content_type = _header(scope, b"content-type").strip().lower()
    if content_type.startswith("application/grpc-web"):
        await send_grpc_web(send, content_type, error, CONNECT_CODES, http_status=status)
    elif scope["method"] == "POST":
        await send_json(send, status, error, CONNECT_CODES)
    else:
        body = (error.message + "\n").encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"x-content-type-options", b"nosniff"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )
