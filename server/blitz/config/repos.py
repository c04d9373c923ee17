"""Repository sources and credentials the operator allows, as settings.

`--repo-allow` takes URL patterns (`https://git.example.com/acme/*`, `file:///srv/repos/*`):
a session may start from a repository only when its URL matches one (blitz.repos says how
patterns match). `[repo_credentials.NAME]` tables in the configuration file give git a
user name and password (a token) for the URLs under a prefix, to every principal or to
those named; in a flag or a variable the same as a JSON object. The password is a secret:
git gets it through a credential helper for a clone or a push only, never in a URL, an
argument, a command's sight, an event or a log line (docs/repositories.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["DeclaredCredential", "declared_credentials", "repo_patterns"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KEYS = frozenset({"url", "username", "password", "principals"})
_SCHEMES = ("https://", "http://", "git://", "file:///")


@dataclass(frozen=True, kw_only=True)
class DeclaredCredential:
    """One `[repo_credentials.NAME]` table: for sources whose URL starts with `url`."""

    name: str
    url: str
    username: str
    password: str = field(repr=False)
    # Only these principals' sessions use it; empty: every principal's.
    principals: tuple[str, ...] = ()


def repo_patterns(text: str) -> tuple[str, ...]:
    """Comma-separated URL patterns (`https://git.example.com/acme/*`), none for empty."""
    found = tuple(part.strip() for part in text.split(",") if part.strip())
    for pattern in found:
        if not pattern.startswith(_SCHEMES):
            raise ValueError(
                f"{pattern!r} must start with https://, http://, git:// or file:/// (ssh is"
                " not served)"
            )
        if "@" in urlsplit(pattern).netloc:
            raise ValueError(f"{pattern!r} must not hold a user or password")
    return tuple(dict.fromkeys(found))


def declared_credentials(value: object) -> tuple[DeclaredCredential, ...]:
    """The `repo_credentials` setting, parsed (from the file's tables or JSON);
    ValueError naming the table at fault, never its password."""
    if not isinstance(value, dict) or not all(isinstance(t, dict) for t in value.values()):
        raise ValueError(
            "must be a table of credentials: [repo_credentials.NAME] tables in the file"
        )
    return tuple(_credential(name, table) for name, table in value.items())


def _credential(name: str, table: dict[str, object]) -> DeclaredCredential:
    at = f"repo credential {name!r}"
    if not _NAME.match(name):
        raise ValueError(f"{at}: a name is 1-64 of letters, digits, ., - and _")
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(f"{at}: {', '.join(sorted(unknown))} is no key of a credential")
    url = table.get("url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise ValueError(f"{at}: url must be an https:// (or http://) URL prefix")
    if "@" in urlsplit(url).netloc:
        raise ValueError(f"{at}: url must not hold a user or password")
    username, password = table.get("username", ""), table.get("password")
    if not isinstance(username, str) or not isinstance(password, str) or not password:
        raise ValueError(f"{at}: username must be a string and password a non-empty string")
    principals = table.get("principals", [])
    if not isinstance(principals, list) or not all(isinstance(p, str) for p in principals):
        raise ValueError(f"{at}: principals must be a list of principal names")
    return DeclaredCredential(
        name=name,
        url=url,
        username=_expand(at, "username", username) or "x-access-token",
        password=_expand(at, "password", password),
        principals=tuple(principals),
    )


def _expand(at: str, key: str, text: str) -> str:
    """`${NAME}` taken from the server's environment at start."""
    missing = [v for v in _VARIABLE.findall(text) if v not in os.environ]
    if missing:
        raise ValueError(f"{at}: {key} names ${{{missing[0]}}}, which is not set")
    return _VARIABLE.sub(lambda m: os.environ[m.group(1)], text)
