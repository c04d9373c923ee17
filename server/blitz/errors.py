"""The one error type of Blitz and the catalog of reasons it may carry.

Every failed call and every failed turn carries a `blitz.v1.ErrorInfo`. The core raises
`BlitzError`; each transport maps it to its wire with one table (`Status` below gives the
canonical status for every reason). Library exceptions are translated where they enter;
nothing else should reach a client, and an unexpected exception becomes `INTERNAL` with a
generic message (`internal_error`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from blitz.v1 import turn_pb2

__all__ = ["BlitzError", "Reason", "Status", "internal_error", "invalid_argument"]


class Status(enum.Enum):
    """Canonical status codes, named as gRPC and Connect both name them."""

    INVALID_ARGUMENT = "invalid_argument"
    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    FAILED_PRECONDITION = "failed_precondition"
    PERMISSION_DENIED = "permission_denied"
    UNAUTHENTICATED = "unauthenticated"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    CANCELLED = "canceled"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


class Reason(enum.Enum):
    """The catalog: each reason with the status it travels under.

    Reasons are part of the protocol (docs/protocol.md lists them); add, never rename.
    """

    INVALID_ARGUMENT = ("INVALID_ARGUMENT", Status.INVALID_ARGUMENT)
    SESSION_NOT_FOUND = ("SESSION_NOT_FOUND", Status.NOT_FOUND)
    TURN_NOT_FOUND = ("TURN_NOT_FOUND", Status.NOT_FOUND)
    REQUEST_NOT_FOUND = ("REQUEST_NOT_FOUND", Status.NOT_FOUND)
    RULE_NOT_FOUND = ("RULE_NOT_FOUND", Status.NOT_FOUND)
    FILE_NOT_FOUND = ("FILE_NOT_FOUND", Status.NOT_FOUND)
    WEBHOOK_NOT_FOUND = ("WEBHOOK_NOT_FOUND", Status.NOT_FOUND)
    DELIVERY_NOT_FOUND = ("DELIVERY_NOT_FOUND", Status.NOT_FOUND)
    SCHEDULE_NOT_FOUND = ("SCHEDULE_NOT_FOUND", Status.NOT_FOUND)
    HOOK_NOT_FOUND = ("HOOK_NOT_FOUND", Status.NOT_FOUND)
    SESSION_BUSY = ("SESSION_BUSY", Status.FAILED_PRECONDITION)
    SESSION_CLOSED = ("SESSION_CLOSED", Status.FAILED_PRECONDITION)
    NO_RUNNING_TURN = ("NO_RUNNING_TURN", Status.FAILED_PRECONDITION)
    TURN_MISMATCH = ("TURN_MISMATCH", Status.FAILED_PRECONDITION)
    TURN_ID_REUSED = ("TURN_ID_REUSED", Status.ALREADY_EXISTS)
    ALREADY_RESOLVED = ("ALREADY_RESOLVED", Status.FAILED_PRECONDITION)
    NO_PENDING_PLAN = ("NO_PENDING_PLAN", Status.FAILED_PRECONDITION)
    MAX_TURNS = ("MAX_TURNS", Status.RESOURCE_EXHAUSTED)
    BUDGET_EXCEEDED = ("BUDGET_EXCEEDED", Status.RESOURCE_EXHAUSTED)
    TURN_TIMEOUT = ("TURN_TIMEOUT", Status.DEADLINE_EXCEEDED)
    CANCELLED = ("CANCELLED", Status.CANCELLED)
    MODEL_ERROR = ("MODEL_ERROR", Status.UNAVAILABLE)
    CONTEXT_OVERFLOW = ("CONTEXT_OVERFLOW", Status.RESOURCE_EXHAUSTED)
    UNAUTHENTICATED = ("UNAUTHENTICATED", Status.UNAUTHENTICATED)
    PERMISSION_DENIED = ("PERMISSION_DENIED", Status.PERMISSION_DENIED)
    RATE_LIMITED = ("RATE_LIMITED", Status.RESOURCE_EXHAUSTED)
    SLOW_CONSUMER = ("SLOW_CONSUMER", Status.RESOURCE_EXHAUSTED)
    REQUEST_TOO_LARGE = ("REQUEST_TOO_LARGE", Status.RESOURCE_EXHAUSTED)
    SERVER_RESTARTED = ("SERVER_RESTARTED", Status.UNAVAILABLE)
    SHUTTING_DOWN = ("SHUTTING_DOWN", Status.UNAVAILABLE)
    INTERNAL = ("INTERNAL", Status.INTERNAL)
    # A workflow step failed (a command's exit status, an until check that never passed,
    # an approval not given); `metadata.step` names it.
    STEP_FAILED = ("STEP_FAILED", Status.FAILED_PRECONDITION)
    # An ACP agent (docs/agents.md, table F): it could not be started or could not take
    # its session back; its process ended mid-turn; it did not answer in time; it broke
    # the protocol; it answered the prompt with an error.
    AGENT_UNAVAILABLE = ("AGENT_UNAVAILABLE", Status.UNAVAILABLE)
    AGENT_CRASHED = ("AGENT_CRASHED", Status.UNAVAILABLE)
    AGENT_TIMEOUT = ("AGENT_TIMEOUT", Status.DEADLINE_EXCEEDED)
    AGENT_PROTOCOL_ERROR = ("AGENT_PROTOCOL_ERROR", Status.INTERNAL)
    AGENT_ERROR = ("AGENT_ERROR", Status.UNAVAILABLE)
    # The model's output limit ended the answer.
    MAX_TOKENS = ("MAX_TOKENS", Status.RESOURCE_EXHAUSTED)
    # The agent refused to go on with the prompt.
    REFUSED = ("REFUSED", Status.FAILED_PRECONDITION)
    # A session's repository (docs/repositories.md): its source could not be reached,
    # read or authenticated to, or did not answer in time; its clone would pass
    # --repo-max-size; the origin refused a push (the branch exists and has moved, say);
    # there is nothing to bundle or push (the workspace is as it started).
    REPOSITORY_UNAVAILABLE = ("REPOSITORY_UNAVAILABLE", Status.UNAVAILABLE)
    REPOSITORY_TOO_LARGE = ("REPOSITORY_TOO_LARGE", Status.RESOURCE_EXHAUSTED)
    PUSH_REJECTED = ("PUSH_REJECTED", Status.FAILED_PRECONDITION)
    # A person (or a rule) denied a push's approval: nothing was pushed.
    PUSH_DENIED = ("PUSH_DENIED", Status.FAILED_PRECONDITION)
    NO_CHANGES = ("NO_CHANGES", Status.FAILED_PRECONDITION)
    # A turn_start hook refused the turn's prompt (docs/hooks.md); `metadata.hook_id`.
    HOOK_DENIED = ("HOOK_DENIED", Status.PERMISSION_DENIED)

    def __init__(self, wire: str, status: Status) -> None:
        self.wire = wire
        self.status = status


class BlitzError(Exception):
    """A failure a client should see: a reason from the catalog, metadata, a message."""

    def __init__(
        self, reason: Reason, message: str, metadata: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = dict(metadata or {})

    @property
    def status(self) -> Status:
        return self.reason.status

    def to_proto(self) -> turn_pb2.ErrorInfo:
        return turn_pb2.ErrorInfo(
            reason=self.reason.wire, metadata=self.metadata, message=self.message
        )

    def __repr__(self) -> str:
        return f"BlitzError({self.reason.wire}, {self.message!r}, {self.metadata!r})"


def invalid_argument(field: str, message: str, **metadata: str) -> BlitzError:
    """INVALID_ARGUMENT naming the offending field (metadata `field`)."""
    return BlitzError(Reason.INVALID_ARGUMENT, message, {"field": field, **metadata})


def internal_error() -> BlitzError:
    """What a client sees of an unexpected exception: nothing of its text."""
    return BlitzError(Reason.INTERNAL, "internal error; the server log has the details")
