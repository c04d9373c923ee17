"""Whether a server must require tokens: on by default as soon as it can be reached.

A server with tokens configured (in the store or in settings) requires one on every call,
wherever it listens. One with none may serve loopback only; told to listen beyond it, it
refuses to start, unless `--insecure` says that whoever reaches the port is trusted (and
the log says so, loudly, at every start). Hosts are judged by what they name, not by
resolving them: only `localhost` and loopback addresses count as loopback.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

__all__ = ["ServeRefused", "exposed_hosts", "requires_tokens"]


class ServeRefused(Exception):
    """The server will not start as configured; the message says why and what to do."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposed_hosts(hosts: Sequence[str]) -> list[str]:
    """The listen addresses that reach beyond this machine."""
    return [host for host in hosts if not _loopback(host)]


def requires_tokens(*, hosts: Sequence[str], tokens_configured: bool, insecure: bool) -> bool:
    """Whether every call must carry a token; ServeRefused when it must and none exists."""
    if tokens_configured:
        return True
    exposed = exposed_hosts(hosts)
    if exposed and not insecure:
        raise ServeRefused(
            f"refusing to listen on {', '.join(exposed)} with no tokens, since anyone who"
            " reaches the port could read every session and run commands. Create one with"
            " `blitz token create NAME`, give --tokens or --tokens-file, or pass --insecure"
            " to serve without authentication."
        )
    return False
