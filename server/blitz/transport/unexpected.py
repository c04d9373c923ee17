"""The one rule both transports apply to an exception that is not a `BlitzError`.

It is logged with its traceback and becomes INTERNAL with a generic message, so its text
never reaches a client. Each transport then maps the `BlitzError` that leaves the block to
its own wire; this module knows no wire format.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import structlog

from blitz.errors import BlitzError, internal_error

__all__ = ["unexpected_as_internal"]

log = structlog.get_logger(__name__)


@contextmanager
def unexpected_as_internal(
    kind: Literal["call", "stream"], *, rpc: str, transport: str
) -> Iterator[None]:
    """Let `BlitzError`s (and cancellation) through; log any other exception, raise INTERNAL."""
    try:
        yield
    except BlitzError:
        raise
    except Exception:
        log.exception(f"unexpected error in {kind}", rpc=rpc, transport=transport)
        raise internal_error() from None
