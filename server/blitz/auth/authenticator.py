"""Who a call is from: the bearer token in its `authorization` header, checked.

The transports ask `authenticate` before any call reaches a port, so no call of either
wire reaches the core unauthenticated. Health checks, reflection and metrics are not
behind it.

Tokens are those in the store (`blitz token create`) and those in settings. A store lookup
is remembered for a second, so a busy client costs no query per call, and a revoked token
stops working within that second. Every refusal is UNAUTHENTICATED, and says what was
wrong with the header without ever echoing the token.

A server that started with no token (on loopback, or `--insecure`) takes calls without
one until a token appears in the store: it looks every `_LOOK_S` seconds, at a call, and
from the first live token on it requires one for every call (`required`), says so in its
log and tells `on_required`. So `blitz token create` locks a running server within
seconds, with no restart; the switch is one way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import structlog

from blitz.auth.tokens import Principal, StaticToken, token_hash
from blitz.errors import BlitzError, Reason
from blitz.ports import CallContext
from blitz.store import Store

__all__ = ["Authenticator"]

log = structlog.get_logger(__name__)

# Seconds a store lookup is remembered.
_REMEMBER_S = 1.0
# Seconds between looks for a first token, while none is required.
_LOOK_S = 2.0
# Lookups remembered at most (the oldest go first).
_REMEMBERED = 10_000


class Authenticator:
    """Checks bearer tokens against the store and the tokens from settings."""

    def __init__(
        self,
        store: Store,
        static: Iterable[StaticToken] = (),
        *,
        principals: Iterable[str] = (),
        required: bool = True,
        on_required: Callable[[frozenset[str]], None] = lambda principals: None,
    ) -> None:
        """`principals`: who has a token at start (for what serves several, blitz.server).
        `required`: whether calls need a token now (see the module doc)."""
        self._store = store
        self._static = {token.hash: token.principal for token in static}
        self.principals = frozenset(principals)
        self.required = required
        self.on_required = on_required
        self._seen: dict[str, tuple[float, Principal | None]] = {}
        self._look_at = 0.0

    async def authenticate(self, ctx: CallContext) -> CallContext:
        """The call's context with its principal (`blitz.ports.Authenticate`)."""
        if not self.required and not await self._token_appeared():
            return ctx
        principal = await self.principal(ctx.metadata)
        return replace(ctx, caller=principal.name, admin=principal.admin)

    async def _token_appeared(self) -> bool:
        """Whether a first token is in the store now (looked for every `_LOOK_S`)."""
        now = time.monotonic()
        if now < self._look_at:
            return False
        self._look_at = now + _LOOK_S
        live = {t.name for t in await self._store.list_tokens() if t.revoke_time is None}
        if not live or self.required:
            return self.required
        self.required = True
        self.principals = frozenset(live)
        log.warning(
            "tokens required from now on: a token was created while the server ran",
            principals=len(live),
        )
        self.on_required(self.principals)
        return True

    async def principal(self, metadata: Mapping[str, str]) -> Principal:
        """The principal of a call's headers (lower-case keys); UNAUTHENTICATED otherwise."""
        header = metadata.get("authorization", "")
        if not header:
            raise _refused("this server needs a bearer token: `authorization: Bearer TOKEN`")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise _refused("the authorization header must be `Bearer TOKEN`")
        digest = token_hash(token)
        principal = self._static.get(digest)
        if principal is None:
            principal = await self._stored(digest)
        if principal is None:
            raise _refused("the token is unknown or revoked")
        return principal

    async def is_admin(self, name: str) -> bool:
        """Whether the principal `name` has an admin's token (a live one, from the settings
        or the store): for what acts as a principal without its token (a Slack user the
        operator maps to one)."""
        if any(p.name == name and p.admin for p in self._static.values()):
            return True
        stored = await self._store.list_tokens()
        return any(t.name == name and t.admin and t.revoke_time is None for t in stored)

    async def _stored(self, digest: str) -> Principal | None:
        now = time.monotonic()
        seen = self._seen.get(digest)
        if seen is not None and seen[0] > now:
            return seen[1]
        rec = await self._store.find_token(digest)
        principal = None
        if rec is not None and rec.revoke_time is None:
            principal = Principal(rec.name, admin=rec.admin)
        if len(self._seen) >= _REMEMBERED:
            del self._seen[next(iter(self._seen))]
        self._seen[digest] = (now + _REMEMBER_S, principal)
        return principal


def _refused(message: str) -> BlitzError:
    return BlitzError(Reason.UNAUTHENTICATED, message, {"header": "authorization"})
