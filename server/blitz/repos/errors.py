"""The two ways a repository operation fails: a request refused before any git runs, or
git's own failure, sorted into a few kinds the core maps to the protocol's reasons.

Both messages are shown to clients. They never hold a credential: what git printed is
masked (`git.clean_message`) before it becomes one.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["KINDS", "RepoError", "RepoErrorKind", "SourceRefused"]

RepoErrorKind = Literal[
    "ref_not_found",  # the ref (branch, tag, commit) is not in the source
    "unreachable",  # network, authentication, or not a repository
    "too_large",  # past the size bound (git data and checked-out files together)
    "timeout",  # git ran past its time
    "rejected",  # the remote refused a push (not a fast-forward, a hook said no)
    "nothing",  # no change to export or push
    "failed",  # anything else
]
KINDS: frozenset[str] = frozenset(get_args(RepoErrorKind))


class SourceRefused(Exception):
    """A request refused before git runs: `field` names what was wrong ("source.url",
    "source.ref", "source.depth", "branch", "format", "commit"); `str(exc)` says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class RepoError(Exception):
    """Git failed, or would have done what it must not: `kind` is one of `KINDS`."""

    def __init__(self, kind: RepoErrorKind, message: str) -> None:
        assert kind in KINDS, kind
        super().__init__(message)
        self.kind: RepoErrorKind = kind
        self.message = message
