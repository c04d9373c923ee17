"""The small, transport-free context every core call receives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CallContext"]


@dataclass(frozen=True)
class CallContext:
    """Who is calling and how, as the transport saw it.

    `caller` is the authenticated principal ("" when the server runs without auth);
    `deadline` is the call's absolute deadline on `time.monotonic()`'s clock, if any;
    `metadata` holds the request headers (lower-case keys).
    """

    caller: str = ""
    deadline: float | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    peer: str = ""
