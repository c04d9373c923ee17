"""Signing a delivery as the Standard Webhooks specification says, with its own library.

Three headers: `webhook-id` (the message's id, the same for every attempt, so a receiver
can deduplicate), `webhook-timestamp` (the attempt's Unix seconds: each attempt is signed
afresh, so a retry a day later still passes a receiver's five-minute tolerance) and
`webhook-signature`, `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the
webhook's secret. While a rotation overlaps, the previous secret signs too, and the header
holds both signatures, space-separated: a receiver that knows either one verifies. Secrets
are `whsec_` and base64 of 24 random bytes; they are never logged.
"""

from __future__ import annotations

import base64
import math
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from standardwebhooks import Webhook

from blitz.store import WebhookRecord

__all__ = ["new_secret", "signed_headers", "signing_secrets", "valid_secret"]

_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret."""
    return _PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def valid_secret(secret: str) -> bool:
    """Whether `secret` is one the library can sign with (`whsec_` and base64 of 16+ bytes)."""
    if not secret.startswith(_PREFIX):
        return False
    try:
        return len(base64.b64decode(secret[len(_PREFIX) :], validate=True)) >= 16
    except ValueError:
        return False


def signing_secrets(hook: WebhookRecord, now: float) -> list[str]:
    """The secrets that sign now: the webhook's, and the previous one while it overlaps."""
    if hook.previous_secret and hook.previous_until is not None and now < hook.previous_until:
        return [hook.secret, hook.previous_secret]
    return [hook.secret]


def signed_headers(
    message_id: str, body: bytes, *, secrets: Sequence[str], now: float
) -> dict[str, str]:
    """The three headers of one attempt of `body`, signed by each of `secrets`."""
    seconds = math.floor(now)
    stamp = datetime.fromtimestamp(seconds, tz=UTC)
    text = body.decode()
    signatures = [Webhook(secret).sign(message_id, stamp, text) for secret in secrets]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(seconds),
        "webhook-signature": " ".join(signatures),
    }
