"""Authentication: bearer tokens, the principals they stand for, and the check of each call.

`Authenticator` checks a call's token against the store and the tokens from settings;
`authentication` decides from the settings whether tokens are required (see
`exposure.py`) and makes the authenticator the transports ask before every call. Nothing
here knows a wire format or a business rule beyond who is calling.
"""

from blitz.auth.assembly import authentication
from blitz.auth.authenticator import Authenticator
from blitz.auth.exposure import ServeRefused, exposed_hosts, requires_tokens
from blitz.auth.tokens import Principal, StaticToken, new_token, parse_tokens, token_hash

__all__ = [
    "Authenticator",
    "Principal",
    "ServeRefused",
    "StaticToken",
    "authentication",
    "exposed_hosts",
    "new_token",
    "parse_tokens",
    "requires_tokens",
    "token_hash",
]
