"""Webhooks the operator declares (`[[webhooks]]` in the configuration file), made records.

Each is checked as CreateWebhook checks a webhook (its URL's form, its event kinds, its
labels), and its secret must be one the signing library takes. Its id is `wh_config_`
and its name, so that every replica, and every restart, means the same webhook: its
state, failures and deliveries carry over, and one no longer declared is deleted with its
deliveries (`Store.declare_webhooks`). It hears of every principal's sessions, or of
`principal`'s only; the API may test it and list or redeliver its deliveries, and changes
nothing else of it (PERMISSION_DENIED: the file is where it is changed). Its address is
checked by every attempt, as any webhook's is.
"""

from __future__ import annotations

from collections.abc import Sequence

from blitz.config.webhooks import DeclaredWebhook
from blitz.core.webhooks.checks import check_fields
from blitz.core.webhooks.signing import new_secret, valid_secret
from blitz.errors import BlitzError
from blitz.store import WebhookRecord
from blitz.v1 import webhooks_pb2 as wh

__all__ = ["declared_records"]

_FORMATS = {"standard": wh.WEBHOOK_FORMAT_STANDARD, "slack": wh.WEBHOOK_FORMAT_SLACK}


def declared_records(declared: Sequence[DeclaredWebhook], *, now: float) -> list[WebhookRecord]:
    """The records of the declared webhooks; ValueError naming one that cannot be served."""
    records = []
    for hook in declared:
        try:
            events, form = check_fields(
                url=hook.url,
                events=hook.events,
                labels=dict(hook.labels),
                description=hook.description,
                format=_FORMATS[hook.format],
            )
        except BlitzError as exc:
            raise ValueError(f"declared webhook {hook.name!r}: {exc.message}") from None
        if hook.secret and not valid_secret(hook.secret):
            raise ValueError(
                f"declared webhook {hook.name!r}: its secret must be whsec_ and base64 of"
                " 16 bytes or more"
            )
        records.append(
            WebhookRecord(
                id=f"wh_config_{hook.name}",
                owner=hook.principal,
                url=hook.url,
                events=events,
                labels=dict(hook.labels),
                session_id="",
                description=hook.description,
                format=form,
                state=wh.WEBHOOK_STATE_ACTIVE,
                state_reason="",
                server_wide=not hook.principal,
                declared=hook.name,
                # A Slack receiver checks no signature: one is made up when none is given.
                secret=hook.secret or new_secret(),
                create_time=now,
                update_time=now,
            )
        )
    return records
