"""What a receiver's answers do: retries with backoff, Retry-After, a pause after a run of
failures (with a notice to the sessions waiting), and 410 Gone.

Spacing is asserted as lower bounds only (a loaded machine makes gaps longer, never
shorter); waits are bounded in tens of seconds.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from support.receiver import Receiver
from support.webhooks import create
from support.wire import Wire, open_wire, until

from blitz import metrics
from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import webhooks_pb2 as wh

FIRST_DELAY = 0.3  # the hooked server's --webhook-retry-delay
JITTER = 0.2


@asynccontextmanager
async def served(settings: Settings, **overrides: object) -> AsyncIterator[Wire]:
    async with running_server(replace(settings, **overrides)) as server:
        wire = open_wire("connect", server)
        try:
            yield wire
        finally:
            await wire.close()


def failing(times: int, status: int = 500, **headers: str):
    """An answer that fails `times` times with `status`, then says 200."""
    left = [times]

    def answer(_):
        if left[0] > 0:
            left[0] -= 1
            return status, headers, b"boom: try later"
        return 200, {}, b"ok"

    return answer


async def deliveries(wire: Wire, webhook_id: str) -> list[wh.Delivery]:
    listed = await wire.call("ListDeliveries", wh.ListDeliveriesRequest(webhook_id=webhook_id))
    return list(listed.deliveries)


def counted(name: str, outcome: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, {"outcome": outcome}) or 0.0


ATTEMPTS = "blitz_webhook_delivery_attempts_total"
FINISHED = "blitz_webhook_deliveries_finished_total"


async def test_three_500s_then_a_200_deliver_on_the_fourth_attempt_spaced_by_backoff(client):
    before = {
        (name, outcome): counted(name, outcome)
        for name in (ATTEMPTS, FINISHED)
        for outcome in ("retried", "delivered")
    }
    with Receiver(failing(3)) as rx:
        made = await create(client, rx.url, ["finished"])
        session = await client.create_session()
        await client.run_all(session.id, "hello")
        got = await rx.wait_for(lambda r: len(r) >= 4)
        await asyncio.sleep(0.5)
        assert len(rx.requests()) == 4, "delivered once: no attempt after the 200"
        payloads = rx.verified(made.secret)
    assert len({r.headers["webhook-id"] for r in got}) == 1, "one message, four attempts"
    assert len({p["data"]["seq"] for p in payloads}) == 1
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(got)]
    for n, gap in enumerate(gaps):
        assert gap >= FIRST_DELAY * 2**n * (1 - JITTER), f"attempt {n + 2} came too soon: {gaps}"
    [delivery] = await deliveries(client, made.webhook.id)
    assert delivery.state == wh.DELIVERY_STATE_DELIVERED
    assert [a.status for a in delivery.attempts] == [500, 500, 500, 200]
    assert delivery.attempts[0].response == "boom: try later", "the answer's first bytes"
    hook = await client.call("GetWebhook", wh.GetWebhookRequest(webhook_id=made.webhook.id))
    assert hook.failures == 0 and hook.state == wh.WEBHOOK_STATE_ACTIVE
    # At least: the counters are the process's, and other servers' webhooks count there too.
    assert counted(ATTEMPTS, "retried") >= before[ATTEMPTS, "retried"] + 3, "each attempt"
    assert counted(ATTEMPTS, "delivered") >= before[ATTEMPTS, "delivered"] + 1
    assert counted(FINISHED, "delivered") >= before[FINISHED, "delivered"] + 1, "the delivery"
    assert counted(FINISHED, "retried") == 0, "a retried attempt ends no delivery"


async def test_retry_after_is_honoured(client):
    with Receiver(failing(1, 503, **{"Retry-After": "2"})) as rx:
        await create(client, rx.url, ["finished"])
        session = await client.create_session()
        await client.run_all(session.id, "hello")
        first, second = await rx.wait_for(lambda r: len(r) >= 2)
    assert second.at - first.at >= 2.0, "not before the receiver said"


async def test_a_run_of_failures_pauses_the_webhook_and_tells_its_sessions(hooked_settings):
    healthy = [False]

    def answer(_):
        return (200, {}, b"ok") if healthy[0] else (500, {}, b"down")

    async with served(hooked_settings, webhook_pause_after=3) as wire:
        with Receiver(answer) as rx:
            made = await create(wire, rx.url, ["finished"], description="ops pager")
            session = await wire.create_session()
            await wire.run_all(session.id, "hello")
            watch = wire.stream("Watch", s.WatchRequest(session_id=session.id, follow=True))
            notice = await asyncio.wait_for(until(watch, "notice"), 60)
            await watch.aclose()
            assert made.webhook.id in notice.notice.text and "ops pager" in notice.notice.text
            assert notice.notice.error and notice.turn_id == ""
            request = wh.GetWebhookRequest(webhook_id=made.webhook.id)
            hook = await wire.call("GetWebhook", request)
            assert hook.state == wh.WEBHOOK_STATE_FAILING and hook.failures == 3
            assert "3 failed attempts in a row; the last: HTTP 500" in hook.state_reason
            await asyncio.sleep(FIRST_DELAY * 8)
            assert len(rx.requests()) == 3, "paused: nothing is sent"
            healthy[0] = True
            resume = wh.UpdateWebhookRequest(
                webhook_id=made.webhook.id, state=wh.WEBHOOK_STATE_ACTIVE
            )
            resume.update_mask.paths.append("state")
            resumed = await wire.call("UpdateWebhook", resume)
            assert (resumed.state, resumed.failures, resumed.state_reason) == (
                wh.WEBHOOK_STATE_ACTIVE,
                0,
                "",
            )
            await rx.wait_for(lambda r: len(r) == 4)
            rx.verified(made.secret)


async def test_410_gone_disables_the_webhook(client):
    with Receiver(lambda _: (410, {}, b"gone")) as rx:
        made = await create(client, rx.url, ["finished"])
        session = await client.create_session()
        await client.run_all(session.id, "hello")
        await rx.wait_for(lambda r: len(r) == 1)
        request = wh.GetWebhookRequest(webhook_id=made.webhook.id)
        for _ in range(100):
            hook = await client.call("GetWebhook", request)
            if hook.state == wh.WEBHOOK_STATE_GONE:
                break
            await asyncio.sleep(0.1)
        assert hook.state == wh.WEBHOOK_STATE_GONE and "410" in hook.state_reason
        [delivery] = await deliveries(client, made.webhook.id)
        assert delivery.state == wh.DELIVERY_STATE_FAILED
        await client.run_all(session.id, "hello again")
        await asyncio.sleep(1)
        assert len(rx.requests()) == 1, "nothing more is sent to it"


async def test_a_delivery_past_its_window_is_given_up(hooked_settings):
    async with served(hooked_settings, webhook_retry_window=1.0) as wire:
        with Receiver(lambda _: (500, {}, b"down")) as rx:
            made = await create(wire, rx.url, ["finished"])
            session = await wire.create_session()
            await wire.run_all(session.id, "hello")
            for _ in range(300):
                [delivery] = await deliveries(wire, made.webhook.id) or [wh.Delivery()]
                if delivery.state == wh.DELIVERY_STATE_FAILED:
                    break
                await asyncio.sleep(0.1)
    assert delivery.state == wh.DELIVERY_STATE_FAILED
    assert 1 <= len(delivery.attempts) <= len(rx.requests())
