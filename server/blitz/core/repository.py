"""A session's repository as the core's parts read it: the record's, and git's failures
as the protocol's errors (docs/repositories.md). The git work is `blitz.repos`'."""

from __future__ import annotations

from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.repos import RepoError
from blitz.store import SessionRecord
from blitz.v1 import session_pb2 as s

__all__ = ["repo_error", "repository_of"]


def repo_error(exc: RepoError, *, url: str = "", branch: str = "") -> BlitzError:
    """A git failure as the protocol says it. Its message is git's own last words, made
    credential-free by `blitz.repos`."""
    message = str(exc)
    if exc.kind == "ref_not_found":
        return invalid_argument("source.ref", message)
    if exc.kind == "too_large":
        return BlitzError(Reason.REPOSITORY_TOO_LARGE, message, {"url": url} if url else {})
    if exc.kind == "rejected":
        return BlitzError(Reason.PUSH_REJECTED, message, {"branch": branch} if branch else {})
    if exc.kind == "nothing":
        return BlitzError(Reason.NO_CHANGES, message)
    if exc.kind in ("unreachable", "timeout"):
        return BlitzError(Reason.REPOSITORY_UNAVAILABLE, message, {"url": url} if url else {})
    return BlitzError(Reason.INTERNAL, message)


def repository_of(session: SessionRecord) -> s.Repository | None:
    """The repository the session was cloned from, or None (a plain folder)."""
    if not session.repository:
        return None
    return s.Repository.FromString(session.repository)
