"""Authentication as configured: which tokens a server takes, and whether it needs one.

`authentication` reads the tokens of the settings (`--tokens`, `--tokens-file`) and of the
store, and decides, by where the server listens, whether every call must carry one
(`exposure.py`). It answers the `Authenticator` the transports ask before each call, which
may need no token yet (`required` false: none exists, on loopback or `--insecure`) and then
requires one from the first that is made while the server runs; it refuses to start
(`ServeRefused`) a server that would be reachable beyond loopback with none.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from blitz.auth.authenticator import Authenticator
from blitz.auth.exposure import ServeRefused, exposed_hosts, requires_tokens
from blitz.auth.tokens import StaticToken, parse_tokens
from blitz.config import Settings
from blitz.redact import add_known_secrets
from blitz.store import Store

__all__ = ["authentication"]

log = structlog.get_logger(__name__)


async def authentication(settings: Settings, store: Store) -> Authenticator:
    """The authenticator of every call (see the module doc)."""
    static = _static_tokens(settings)
    add_known_secrets(token.secret for token in static)
    stored = [token for token in await store.list_tokens() if token.revoke_time is None]
    hosts = [settings.grpc_host, settings.http_host]
    configured = bool(static or stored)
    if not requires_tokens(hosts=hosts, tokens_configured=configured, insecure=settings.insecure):
        if exposed := exposed_hosts(hosts):
            log.warning(
                "INSECURE: serving beyond loopback with no authentication; anyone who reaches"
                " a port can read every session and run commands",
                hosts=exposed,
            )
        return Authenticator(store, static, required=False)
    principals = {t.principal.name for t in static} | {t.name for t in stored}
    log.info("tokens required", principals=len(principals))
    return Authenticator(store, static, principals=principals)


def _static_tokens(settings: Settings) -> list[StaticToken]:
    """The tokens given in settings: `--tokens` and the lines of `--tokens-file`."""
    try:
        tokens = parse_tokens(settings.tokens, source="--tokens")
        if settings.tokens_file:
            try:
                text = Path(settings.tokens_file).read_text()
            except OSError as exc:
                raise ValueError(f"--tokens-file: cannot read it ({exc.strerror})") from None
            tokens += parse_tokens(text, source=settings.tokens_file)
    except ValueError as exc:
        raise ServeRefused(str(exc)) from None
    return tokens
