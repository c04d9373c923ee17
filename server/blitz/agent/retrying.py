"""What a failed model call means: retry it, overflowed context, or a failed turn.

`classify` sorts a pydantic-ai model error: rate limits (429), server errors (5xx), an
overloaded or unreachable provider and a stream that broke mid-way are worth retrying;
a context-length rejection is CONTEXT_OVERFLOW; anything else — authentication (401/403),
a bad request, an unknown model — fails the turn at once with MODEL_ERROR and the provider's
status in metadata. `RetryPolicy` says how often and how long to wait: exponential backoff
from a short first delay, or the provider's own Retry-After when it gives one (capped).
loop.py does the retrying, from the same history, and tells the client in a transient
`notice`; this module decides only and never sleeps or emits. The errors and notices it
words are seen by clients: they carry the provider's status and our own words, never a
library's or a provider's text (that goes to the log, in loop.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)

from blitz.errors import BlitzError, Reason

__all__ = [
    "RetryPolicy",
    "classify",
    "misbehaviour_error",
    "model_error",
    "retry_notice",
    "status_of",
]

# Phrases of providers that report a too-long prompt as a plain 400.
_OVERFLOW_HINTS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
)


@dataclass(frozen=True)
class RetryPolicy:
    """How many times a failed call is retried, and the waits between tries."""

    retries: int = 3
    first_delay: float = 1.0
    max_delay: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (1 for the first retry)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        return min(self.first_delay * 2 ** (attempt - 1), self.max_delay)


def status_of(exc: ModelAPIError) -> int | None:
    """The provider's HTTP status, when the failure has one."""
    return exc.status_code if isinstance(exc, ModelHTTPError) else None


def classify(exc: ModelAPIError) -> str:
    """ "retry", "overflow" or "fail"."""
    if isinstance(exc, ModelContextWindowExceededError) or _mentions_overflow(exc):
        return "overflow"
    if isinstance(exc, ModelAuthenticationError | ModelRequestRejectedError):
        return "fail"
    if isinstance(
        exc, ModelRateLimitError | ModelServerError | ModelUnavailableError | ModelConnectionError
    ):
        return "retry"
    status = status_of(exc)
    if status is None:
        # No status: a transport failure or a stream that broke; trying again may work.
        return "retry"
    return "retry" if status == 429 or status >= 500 else "fail"


def model_error(exc: ModelAPIError, *, model: str, attempts: int = 1) -> BlitzError:
    """The BlitzError a turn fails with for `exc` (after `attempts` tries)."""
    status = status_of(exc)
    metadata = {"model": model}
    if status is not None:
        metadata["status"] = str(status)
    if exc.provider_error_code:
        metadata["provider_code"] = exc.provider_error_code
    if classify(exc) == "overflow":
        return BlitzError(
            Reason.CONTEXT_OVERFLOW,
            "the prompt is longer than the model's context window; try /compact",
            metadata,
        )
    what = _describe(exc, status)
    if attempts > 1:
        metadata["attempts"] = str(attempts)
        what += f" (gave up after {attempts} tries)"
    return BlitzError(Reason.MODEL_ERROR, f"the model call failed: {what}", metadata)


def misbehaviour_error(exc: UnexpectedModelBehavior, *, model: str) -> BlitzError:
    """The BlitzError a turn fails with when the model's answer broke pydantic-ai's rules.

    (An empty response, a tool call retried past its limit, an output that never validated.)
    """
    return BlitzError(
        Reason.MODEL_ERROR,
        f"the model {model!r} gave an answer that could not be used "
        f"({type(exc).__name__}); the server log has the details",
        {"model": model},
    )


def retry_notice(exc: ModelAPIError, *, delay: float, attempt: int, retries: int) -> str:
    """The transient notice a client sees before a retry."""
    status = status_of(exc)
    if status is not None:
        why = str(status)
    elif isinstance(exc, ModelConnectionError):
        why = "connection failed"
    else:
        why = "stream broke" if exc.in_stream else "error"
    return f"model call failed ({why}), retrying in {delay:.1f}s (retry {attempt} of {retries})"


def _describe(exc: ModelAPIError, status: int | None) -> str:
    if status in (401, 403) or isinstance(exc, ModelAuthenticationError):
        return f"the provider refused the credentials (HTTP {status})"
    if status is not None:
        return f"the provider answered HTTP {status}"
    return type(exc).__name__


def _mentions_overflow(exc: ModelAPIError) -> bool:
    if status_of(exc) not in (400, 413, None):
        return False
    text = f"{exc.provider_error_code or ''} {exc.body or ''} {exc.message}".lower()
    return any(hint in text for hint in _OVERFLOW_HINTS)
