"""Webhooks: subscriptions that POST what happens in sessions to a URL (docs/webhooks.md).

`service.py` serves WebhookService (`WebhookCore`); `dispatcher.py` turns the store's
outbox into deliveries and sends them; `matching.py` says which webhook hears of which
event, `payloads.py` what a delivery says, `signing.py` how it is signed, `sending.py` how
one attempt goes out, `retries.py` what its answer means; `checks.py` checks requests,
`views.py` answers them, and `declared.py` makes the operator's webhooks records.
"""

from blitz.core.webhooks.retries import Retries
from blitz.core.webhooks.service import WebhookCore

__all__ = ["Retries", "WebhookCore"]
