"""Every check of a WebhookService request; each failure is INVALID_ARGUMENT naming the
field (as `blitz.core.api.validation` does for the session calls), or PERMISSION_DENIED for
what the caller may not ask at all.

A webhook's URL is checked twice: its form here, when it is given, and its address by
`target` — resolved now and held to the same checks as every attempt (`blitz.outbound`),
so that a URL no delivery could reach is refused at once. A name that does not resolve
yet (a receiver not deployed yet), or not within two seconds, passes: each attempt checks
it again, at connect time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from urllib.parse import urlsplit

from blitz.core.api import validation as check
from blitz.core.webhooks.matching import ALL_KINDS
from blitz.core.webhooks.sending import refusal, target_problem
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.outbound import AddressPolicy, Refused, resolve
from blitz.store.webhook_records import WEBHOOK_KINDS
from blitz.v1 import webhooks_pb2 as wh

__all__ = [
    "KINDS",
    "MUTABLE",
    "WEBHOOKS_MAX",
    "check_events",
    "check_fields",
    "check_format",
    "check_mask",
    "check_overlap",
    "check_state",
    "check_url",
    "read_only",
    "server_wide_refused",
    "target",
]

# The event kinds a webhook may ask for, in the docs' order (and "*").
KINDS = WEBHOOK_KINDS
# Webhooks one principal may have.
WEBHOOKS_MAX = 100
# What UpdateWebhook's mask may name.
MUTABLE = ("url", "events", "labels", "session_id", "description", "format", "state")
_URL_MAX = 2048
_DESCRIPTION_MAX = 500
_OVERLAP_MAX_S = 30 * 24 * 3600
_RESOLVE_WITHIN = 2.0


def check_url(url: str) -> str:
    if not url:
        raise invalid_argument("url", "url is required")
    if len(url) > _URL_MAX:
        raise invalid_argument("url", f"url is longer than {_URL_MAX:,} characters", limit="2048")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        raise invalid_argument("url", "url is not a URL whose host and port can be read") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise invalid_argument("url", "url must be an absolute https:// (or http://) URL")
    return url


def check_events(events: Sequence[str]) -> list[str]:
    """The kinds asked for, each once, in the order given."""
    if not events:
        raise invalid_argument(
            "events", "events is required: one or more kinds, or *", accepted=", ".join(KINDS)
        )
    found: list[str] = []
    for kind in events:
        if kind != ALL_KINDS and kind not in KINDS:
            raise invalid_argument(
                "events",
                f"{kind[:64]!r} is no event kind a webhook can hear of",
                accepted=", ".join((*KINDS, ALL_KINDS)),
            )
        if kind not in found:
            found.append(kind)
    return found


def check_format(value: int) -> int:
    if value not in wh.WebhookFormat.values():
        raise invalid_argument("format", f"format {value} is not a WebhookFormat")
    return value or wh.WEBHOOK_FORMAT_STANDARD


def check_fields(
    *, url: str, events: Sequence[str], labels: dict[str, str], description: str, format: int
) -> tuple[list[str], int]:
    """A new webhook's fields; its event kinds and its format, normalized."""
    check_url(url)
    kinds = check_events(events)
    check.check_labels(labels)
    if len(description) > _DESCRIPTION_MAX:
        raise invalid_argument(
            "description",
            f"description is longer than {_DESCRIPTION_MAX} characters",
            limit=str(_DESCRIPTION_MAX),
        )
    return kinds, check_format(format)


def check_mask(paths: Sequence[str]) -> list[str]:
    if not paths:
        raise invalid_argument(
            "update_mask", "update_mask names no field", accepted=", ".join(MUTABLE)
        )
    for path in paths:
        if path not in MUTABLE:
            raise invalid_argument(
                "update_mask",
                f"update_mask may not name {path[:64]!r}",
                accepted=", ".join(MUTABLE),
            )
    return list(paths)


def check_state(state: int) -> int:
    if state not in (wh.WEBHOOK_STATE_ACTIVE, wh.WEBHOOK_STATE_PAUSED):
        raise invalid_argument("state", "state may be set to ACTIVE (resume) or PAUSED only")
    return state


def check_overlap(req: wh.RotateWebhookSecretRequest) -> float:
    """Seconds the previous secret signs on: 24 hours unless given."""
    if not req.HasField("overlap"):
        return 24 * 3600.0
    overlap = req.overlap
    seconds = overlap.seconds + overlap.nanos / 1e9
    if not 0 <= overlap.nanos < 1_000_000_000 or seconds < 0:
        raise invalid_argument("overlap", "overlap is not a valid duration")
    if seconds > _OVERLAP_MAX_S:
        raise invalid_argument("overlap", "overlap is longer than 30 days", limit="2592000s")
    return seconds


def read_only(declared: str) -> BlitzError:
    return BlitzError(
        Reason.PERMISSION_DENIED,
        f"webhook {declared!r} is declared in the server's configuration file: change it there",
        {"declared": declared},
    )


def server_wide_refused() -> BlitzError:
    return BlitzError(
        Reason.PERMISSION_DENIED,
        "only an admin may make a server-wide webhook",
        {"field": "server_wide"},
    )


async def target(url: str, policy: AddressPolicy) -> None:
    """Refuse a URL whose address no attempt could reach (see the module doc)."""
    try:
        async with asyncio.timeout(_RESOLVE_WITHIN):
            resolved = await resolve(url, policy)
    except TimeoutError:
        return
    except Refused as exc:
        if exc.kind == "unresolved":
            return
        raise invalid_argument("url", refusal(exc), reason=exc.kind) from None
    if problem := target_problem(resolved, policy):
        raise invalid_argument("url", problem, reason="http")
