"""An approval link's token: one answer to one request, signed by the server's key.

A token says everything a link does: the session, the request, the principal it answers
as (the session's owner when the link was made), the choice (a decision for an approval,
an option's index for a question) and when it stops working. It is the credential of that
one answer, so a Slack button carries the same token as the link beside it.

Its text is `v1.PAYLOAD.MAC`: PAYLOAD is compact JSON in base64url, MAC the base64url
HMAC-SHA256 of `blitz-link.v1.PAYLOAD` under the server's `links` key (32 random bytes
kept in the store, `server_keys`, made at the first start and never sent anywhere). The
MAC covers the payload's text as sent, and is compared as text in constant time, so a
change to any byte of either (another principal, another decision, a later expiry) is
refused, and no second spelling of a valid token exists. A token is refused before its
payload is read when it is longer than `TOKEN_MAX`.

Nothing here decides anything or reads the store: `deciding.py` does, once a token checks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Literal

__all__ = ["KEY_NAME", "TOKEN_MAX", "LinkRefused", "LinkSigner", "LinkToken", "new_key"]

# The store's name for the key links are signed with.
KEY_NAME = "links"
# The longest token text looked at; a real one is a few hundred characters.
TOKEN_MAX = 2048
_VERSION = "v1"
_DOMAIN = b"blitz-link."
_FIELDS = {"s", "r", "p", "e", "d", "o"}


def new_key() -> bytes:
    """A fresh key, for the store to keep if it has none yet."""
    return secrets.token_bytes(32)


@dataclass(frozen=True)
class LinkToken:
    """What a link does. Exactly one of `decision` (an approval's, a `blitz.v1.Decision`)
    and `option` (a question's option, by index) is set."""

    session_id: str
    request_id: str
    # Who it answers as: the session's owner when it was made ("" without tokens).
    principal: str
    # Unix seconds after which it is refused.
    expires: int
    decision: int = 0
    option: int = -1


class LinkRefused(Exception):
    """A token that is not taken: "invalid" (malformed, altered, another key's) or
    "expired"."""

    def __init__(self, kind: Literal["invalid", "expired"]) -> None:
        super().__init__(kind)
        self.kind: Literal["invalid", "expired"] = kind


class LinkSigner:
    """Makes and checks tokens under one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("a link key has at least 32 bytes")
        self._key = key

    def sign(self, token: LinkToken) -> str:
        body: dict[str, object] = {
            "s": token.session_id,
            "r": token.request_id,
            "p": token.principal,
            "e": token.expires,
        }
        if token.option >= 0:
            body["o"] = token.option
        else:
            body["d"] = token.decision
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
        payload = _b64(text)
        return f"{_VERSION}.{payload}.{self._mac(payload)}"

    def verify(self, text: str, *, now: float) -> LinkToken:
        """The token `text` stands for; LinkRefused when it is not one of this key's, or
        its time is up (checked after the signature: an altered expiry is "invalid")."""
        if len(text) > TOKEN_MAX or not text.isascii():
            raise LinkRefused("invalid")
        version, _, rest = text.partition(".")
        payload, _, mac = rest.partition(".")
        if version != _VERSION or not payload or not mac:
            raise LinkRefused("invalid")
        if not hmac.compare_digest(self._mac(payload), mac):
            raise LinkRefused("invalid")
        token = _token_of(payload)  # signed by us: malformed only if we wrote it so
        if now >= token.expires:
            raise LinkRefused("expired")
        return token

    def _mac(self, payload: str) -> str:
        message = _DOMAIN + _VERSION.encode() + b"." + payload.encode()
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _token_of(payload: str) -> LinkToken:
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        body = json.loads(raw)
    except (binascii.Error, ValueError):
        raise LinkRefused("invalid") from None
    if not isinstance(body, dict) or not set(body) <= _FIELDS:
        raise LinkRefused("invalid")
    texts = [body.get(key) for key in ("s", "r", "p")]
    numbers = [body.get(key) for key in ("e", "d", "o") if key in body]
    if not all(isinstance(v, str) for v in texts) or not all(type(v) is int for v in numbers):
        raise LinkRefused("invalid")
    if ("d" in body) == ("o" in body) or "e" not in body or not body["s"] or not body["r"]:
        raise LinkRefused("invalid")
    return LinkToken(
        session_id=body["s"],
        request_id=body["r"],
        principal=body["p"],
        expires=body["e"],
        decision=body.get("d", 0),
        option=body.get("o", -1),
    )
