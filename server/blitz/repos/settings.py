"""What the operator decides about sessions from a repository, as one frozen object.

Built once at the entry point (`blitz.assembly`) from the server's settings and handed to
`Repositories`; nothing here reads the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Credential", "RepoSettings"]


@dataclass(frozen=True)
class Credential:
    """A user name and password (a token) for sources whose URL starts with `url_prefix`,
    for the sessions of `principals` (empty: every principal's)."""

    url_prefix: str
    username: str
    password: str = field(repr=False)
    principals: tuple[str, ...] = ()


@dataclass(frozen=True)
class RepoSettings:
    # Blitz's own git data: SESSION.git and SESSION.index (created if missing, 0700).
    data_dir: Path
    # URL patterns a source must match (blitz.repos.sources): none, no source is allowed.
    allow: tuple[str, ...] = ()
    # Bytes a clone may take: Blitz's git data and the checked-out workspace together.
    max_size: int = 1 << 30
    # Seconds one git operation may run (a clone, a push, a diff).
    timeout: float = 600.0
    credentials: tuple[Credential, ...] = ()
    # Whether a push may target the origin's default branch.
    push_default_branch: bool = False
    # Author and committer of Blitz's own commits, "Name <email>".
    author: str = "Blitz <blitz@localhost>"
