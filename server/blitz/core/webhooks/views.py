"""The protobuf views of webhook records: what WebhookService answers. No secret is in
any of them: a secret is shown once, by the call that makes it."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from blitz.core.api.views import timestamp
from blitz.store import AttemptRecord, DeliveryRecord, DeliveryState, WebhookRecord
from blitz.v1 import webhooks_pb2 as wh

__all__ = ["delivery_view", "webhook_view"]

_STATES = {
    DeliveryState.PENDING: wh.DELIVERY_STATE_PENDING,
    DeliveryState.DELIVERED: wh.DELIVERY_STATE_DELIVERED,
    DeliveryState.FAILED: wh.DELIVERY_STATE_FAILED,
}


def webhook_view(rec: WebhookRecord, *, now: float) -> wh.Webhook:
    view = wh.Webhook(
        id=rec.id,
        url=rec.url,
        events=rec.events,
        labels=rec.labels,
        session_id=rec.session_id,
        description=rec.description,
        format=rec.format,  # type: ignore[arg-type]
        state=rec.state,  # type: ignore[arg-type]
        state_reason=rec.state_reason,
        owner=rec.owner,
        server_wide=rec.server_wide,
        declared=rec.declared,
        create_time=timestamp(rec.create_time),
        update_time=timestamp(rec.update_time),
        failures=rec.failures,
    )
    if rec.previous_secret and rec.previous_until is not None and rec.previous_until > now:
        view.previous_secret_expire_time.CopyFrom(timestamp(rec.previous_until))
    return view


def _attempt(rec: AttemptRecord) -> wh.DeliveryAttempt:
    latency = Duration()
    latency.FromNanoseconds(int(rec.latency * 1e9))
    return wh.DeliveryAttempt(
        number=rec.number,
        time=timestamp(rec.time),
        status=rec.status,
        latency=latency,
        error=rec.error,
        response=rec.response,
    )


def delivery_view(rec: DeliveryRecord) -> wh.Delivery:
    view = wh.Delivery(
        id=rec.id,
        webhook_id=rec.webhook_id,
        message_id=rec.message_id,
        type=rec.kind,
        session_id=rec.session_id,
        turn_id=rec.turn_id,
        seq=rec.seq,
        state=_STATES[rec.state],
        create_time=timestamp(rec.create_time),
        give_up_time=timestamp(rec.deadline),
        attempts=[_attempt(a) for a in rec.attempts],
    )
    if rec.state is DeliveryState.PENDING:
        view.next_attempt_time.CopyFrom(timestamp(rec.next_attempt))
    return view
