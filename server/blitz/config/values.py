"""Setting values from text: what a flag or a `BLITZ_*` variable may hold, parsed.

Each parser takes the text as given and returns the typed value, or raises `ValueError`
with the rule the text broke ("must be a port number from 0 to 65535"); `blitz.config` adds
which flag or variable it came from. Pure functions: nothing here reads the environment.
"""

from __future__ import annotations

import ipaddress
import json
import re

from blitz.config.agents import DeclaredAgent
from blitz.config.agents import declared_agents as _agents
from blitz.config.hooks import DeclaredHook
from blitz.config.hooks import declared_hooks as _hooks
from blitz.config.repos import DeclaredCredential, repo_patterns
from blitz.config.repos import declared_credentials as _credentials
from blitz.config.webhooks import DeclaredWebhook
from blitz.config.webhooks import declared_webhooks as _declared

__all__ = [
    "address_ranges",
    "bool_",
    "bytes_",
    "bytes_or_none",
    "declared_agents",
    "declared_credentials",
    "declared_hooks",
    "declared_webhooks",
    "host_patterns",
    "int_",
    "non_negative_int",
    "nonempty",
    "optional_port",
    "origins",
    "paths",
    "port",
    "positive_int",
    "positive_seconds",
    "repo_patterns",
    "seconds",
    "slack_users",
    "stripped",
    "url",
]


def port(text: str) -> int:
    value = int_(text)
    if not 0 <= value <= 65535:
        raise ValueError("must be a port number from 0 to 65535")
    return value


def optional_port(text: str) -> int | None:
    """A port, or None for empty text (the listener is off)."""
    return port(text) if text.strip() else None


def int_(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError("must be a whole number") from None


def positive_int(text: str) -> int:
    value = int_(text)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def seconds(text: str) -> float:
    """A number of seconds, optionally suffixed `s`, `m` or `h`."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)\s*", text)
    if not match:
        raise ValueError("must be a number of seconds (e.g. 30, 1.5, 10m, 1h)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value <= 0:
        raise ValueError("must be more than 0 seconds")
    return value


_UNITS = {"": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30}


def bytes_(text: str) -> int:
    """A size in bytes, optionally suffixed KiB, MiB or GiB (or K, M, G)."""
    match = re.fullmatch(r"\s*(\d+)\s*(|k|kib|m|mib|g|gib)\s*", text.lower())
    if not match:
        raise ValueError("must be a size in bytes (e.g. 65536, 64KiB, 1MiB, 8GiB)")
    value = int(match.group(1)) * _UNITS[match.group(2)]
    if value < 1:
        raise ValueError("must be at least 1 byte")
    return value


def bytes_or_none(text: str) -> int:
    """A size in bytes as `bytes_` reads it, or 0 for no limit."""
    return 0 if text.strip() == "0" else bytes_(text)


def bool_(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("must be true or false")


def non_negative_int(text: str) -> int:
    value = int_(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def paths(text: str) -> tuple[str, ...]:
    """Comma-separated absolute paths (none for empty text)."""
    found = tuple(part.strip() for part in text.split(",") if part.strip())
    for path in found:
        if not path.startswith("/"):
            raise ValueError(f"{path!r} must be an absolute path")
    return found


def origins(text: str) -> tuple[str, ...]:
    """Comma-separated web origins, `scheme://host[:port]` each (none for empty text)."""
    found = tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())
    for origin in found:
        if not re.fullmatch(r"https?://[^/\s?#@*]+", origin):
            raise ValueError(
                f"{origin!r} must be an origin: http:// or https://, a host and a port if"
                " any, no path (e.g. http://localhost:5173)"
            )
    return tuple(dict.fromkeys(found))


# A host name as `--allowed-host` takes it: labels of letters, digits, `-` and `_` (Compose's
# service names), optionally after `*.`; or `*` alone.
_HOST_PATTERN = re.compile(r"\*|(\*\.)?[a-z0-9_][a-z0-9_-]*(\.[a-z0-9_][a-z0-9_-]*)*\.?")


def host_patterns(text: str) -> tuple[str, ...]:
    """Comma-separated host names or patterns (`blitz.example.com`, `*.example.com`, `*`),
    lower-cased, a final dot dropped (none for empty text)."""
    found = tuple(part.strip().lower() for part in text.split(",") if part.strip())
    for pattern in found:
        if not _HOST_PATTERN.fullmatch(pattern):
            raise ValueError(
                f"{pattern!r} must be a host name (blitz.example.com), `*.` and a domain"
                " (*.example.com) or `*` for any: no scheme, port or path (IP addresses"
                " need no naming: every one is served)"
            )
    return tuple(dict.fromkeys(pattern.removesuffix(".") for pattern in found))


def stripped(text: str) -> str:
    return text.strip()


def url(text: str) -> str:
    text = text.strip()
    if text and not re.match(r"^https?://[^/\s]+", text):
        raise ValueError("must be an http:// or https:// URL")
    return text


def address_ranges(text: str) -> tuple[str, ...]:
    """Comma-separated address ranges in CIDR (`127.0.0.0/8,fd00::/8`; a bare address is a
    range of one), each as the network it names."""
    found = []
    for part in text.split(","):
        if part.strip():
            try:
                found.append(str(ipaddress.ip_network(part.strip(), strict=False)))
            except ValueError:
                raise ValueError(
                    f"{part.strip()!r} is not an address range (e.g. 10.0.0.0/8)"
                ) from None
    return tuple(found)


def declared_webhooks(text: str) -> tuple[DeclaredWebhook, ...]:
    """Webhooks declared as JSON text: a list of objects, as the file's `[[webhooks]]`."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("must be a JSON list of webhooks") from None
    return _declared(value)


def declared_hooks(text: str) -> tuple[DeclaredHook, ...]:
    """Hooks declared as JSON text: a list of objects, as the file's `[[hooks]]`."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("must be a JSON list of hooks") from None
    return _hooks(value)


def declared_agents(text: str) -> tuple[DeclaredAgent, ...]:
    """Agents declared as JSON text: an object of objects, as the file's `[agents.NAME]`."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("must be a JSON object of agents") from None
    return _agents(value)


def declared_credentials(text: str) -> tuple[DeclaredCredential, ...]:
    """Repository credentials as JSON text: an object of objects, as the file's
    `[repo_credentials.NAME]`."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("must be a JSON object of repository credentials") from None
    return _credentials(value)


# A Slack user id (`U0123ABCD`; `W…` on Enterprise Grid).
_SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,31}")


def slack_users(text: str) -> dict[str, str]:
    """Slack users mapped to principals, as JSON text: an object of strings, as the file's
    `slack_users = { U0123ABCD = "alice" }` (empty text: none)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(
            'must be a JSON object of Slack user ids, e.g. {"U0123ABCD": "alice"}'
        ) from None
    if not isinstance(value, dict):
        raise ValueError('must be a table of Slack user ids, e.g. { U0123ABCD = "alice" }')
    for user, principal in value.items():
        if not _SLACK_USER.fullmatch(user):
            raise ValueError(f"{user!r} is not a Slack user id (U0123ABCD)")
        if not isinstance(principal, str):
            raise ValueError(f"{user}: the principal must be a string")
    return dict(value)


def nonempty(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()
