"""Bearer tokens and the principals they stand for.

A token is `blz_` and 43 random URL-safe characters; only its SHA-256 is ever stored (a
random secret of that length needs no slow hash). A principal is a name: every token of a
name is the same principal, so tokens can be rotated. An admin principal sees and acts on
every principal's sessions. Tokens may also come from settings, for containers and
secrets managers: `NAME:TOKEN[:admin]`, comma-separated or one a line, where TOKEN may be
given as `sha256-HEX` so that the secret itself need not be written down.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field

__all__ = ["PREFIX", "Principal", "StaticToken", "new_token", "parse_tokens", "token_hash"]

PREFIX = "blz_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_HASHED = re.compile(r"^sha256-([0-9a-f]{64})$")


@dataclass(frozen=True)
class Principal:
    """Who a call is from."""

    name: str
    admin: bool = False


@dataclass(frozen=True)
class StaticToken:
    """A token from settings: the principal, the hash of its secret, and the secret itself
    when it was given in clear (so that it can be masked wherever it would leave)."""

    principal: Principal
    hash: str
    secret: str = field(default="", repr=False)


def new_token() -> str:
    """A fresh secret token."""
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: str) -> str:
    """`name`, if it may name a principal; ValueError otherwise."""
    if not _NAME.match(name):
        raise ValueError(
            f"{name!r} is no principal name: 1-64 letters, digits or ._@- starting alphanumeric"
        )
    return name


def parse_tokens(text: str, *, source: str) -> list[StaticToken]:
    """The tokens in `text` (`NAME:TOKEN[:admin]`, by commas or lines; `#` starts a comment).

    ValueError naming `source` and the entry's number (never the secret) when one is wrong.
    """
    entries = [
        entry.strip()
        for line in text.splitlines()
        for entry in line.split("#", 1)[0].split(",")
        if entry.strip()
    ]
    tokens = []
    for number, entry in enumerate(entries, start=1):
        name, _, rest = entry.partition(":")
        secret, _, flag = rest.partition(":")
        where = f"{source}: token {number}"
        try:
            check_name(name)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not secret:
            raise ValueError(f"{where}: write it NAME:TOKEN or NAME:TOKEN:admin")
        if flag not in ("", "admin"):
            raise ValueError(f"{where}: the third part may only be 'admin'")
        hashed = _HASHED.match(secret)
        principal = Principal(name, admin=flag == "admin")
        if hashed:
            tokens.append(StaticToken(principal, hashed.group(1)))
        else:
            tokens.append(StaticToken(principal, token_hash(secret), secret))
    return tokens
