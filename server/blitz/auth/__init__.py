"""Authentication: bearer tokens, the principals they stand for, and the ports behind them.

`Authenticator` checks a call's token against the store and the tokens from settings;
`AuthenticatedSessions` and `AuthenticatedWorkspaces` put every call of the session and
workspace ports behind it; `blitz.server` decides whether tokens are required (see
`exposure.py`). Nothing here knows a wire format or a business rule beyond who is calling.
"""

from blitz.auth.authenticator import Authenticator
from blitz.auth.exposure import ServeRefused, exposed_hosts, requires_tokens
from blitz.auth.ports import AuthenticatedSessions, AuthenticatedWorkspaces
from blitz.auth.tokens import Principal, StaticToken, new_token, parse_tokens, token_hash

__all__ = [
    "AuthenticatedSessions",
    "AuthenticatedWorkspaces",
    "Authenticator",
    "Principal",
    "ServeRefused",
    "StaticToken",
    "exposed_hosts",
    "new_token",
    "parse_tokens",
    "requires_tokens",
    "token_hash",
]
