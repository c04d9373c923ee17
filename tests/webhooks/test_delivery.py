"""Events reach a real receiver, signed as Standard Webhooks says, once each, in seq order.

The receiver checks every signature with the `standardwebhooks` library, as one in
production would. Bounds on time are generous (tens of seconds): the machine may be loaded.
"""

from __future__ import annotations

import asyncio

from support.receiver import Receiver
from support.webhooks import create
from support.wire import Wire, decide, drive, expect_error

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

PROMPT = "$ echo hello\nask: shall I go on? [yes|no]\nAll done."


async def answer_everything(wire: Wire, session_id: str):
    approve = decide(wire, session_id, t.DECISION_ONCE)

    async def on_request(event: t.TurnEvent) -> None:
        if event.HasField("question"):
            answer = s.AnswerRequest(
                session_id=session_id, request_id=event.question.request_id, answers=["yes"]
            )
            await wire.call("Answer", answer)
        else:
            await approve(event)

    return on_request


async def test_approval_question_and_finished_each_arrive_once_in_seq_order(client, receiver):
    made = await create(client, receiver.url)
    session = await client.create_session(title="docs run", labels={"team": "docs"})
    events = await drive(client, session.id, PROMPT, await answer_everything(client, session.id))
    got = await receiver.wait_for(lambda r: len(r) >= 3)
    payloads = receiver.verified(made.secret)
    stored = {e.seq: e for e in events}
    assert [p["type"] for p in payloads] == ["approval_request", "question", "finished"]
    seqs = [p["data"]["seq"] for p in payloads]
    assert seqs == sorted(seqs), "in seq order"
    for payload, request in zip(payloads, got, strict=True):
        data = payload["data"]
        event = stored[data["seq"]]
        assert request.headers["webhook-id"] == f"msg_{session.id}_{event.seq}"
        assert request.headers["content-type"] == "application/json"
        assert (data["session_id"], data["turn_id"]) == (session.id, event.turn_id)
        assert data["labels"] == {"team": "docs"} and data["title"] == "docs run"
        assert data["event"]["seq"] == str(event.seq), "the event in protobuf's JSON mapping"
        assert payload["timestamp"].endswith("Z") and data["time"] == payload["timestamp"]
    approval, question, finished = payloads
    assert approval["data"]["event"]["approvalRequest"]["detail"] == "echo hello"
    assert question["data"]["event"]["question"]["options"] == ["yes", "no"]
    assert finished["data"]["outcome"] == "succeeded" and "reason" not in finished["data"]
    assert "All done." in finished["data"]["event"]["finished"]["output"]
    # Once each: nothing more comes, and the deliveries say so.
    await asyncio.sleep(0.5)
    assert len(receiver.requests()) == 3
    listed = await client.call(
        "ListDeliveries", wh.ListDeliveriesRequest(webhook_id=made.webhook.id)
    )
    assert [d.type for d in listed.deliveries] == ["finished", "question", "approval_request"]
    for delivery in listed.deliveries:
        assert delivery.state == wh.DELIVERY_STATE_DELIVERED
        [attempt] = delivery.attempts
        assert (attempt.number, attempt.status, attempt.response) == (1, 200, "ok")
        assert attempt.latency.ToNanoseconds() > 0


async def test_a_failed_turn_says_its_outcome_and_reason(client, receiver):
    made = await create(client, receiver.url, ["finished"])
    session = await client.create_session()
    stream = client.run(session.id, "$ sleep 30")
    async for event in stream:
        if event.HasField("approval_request"):
            await client.call("Cancel", s.CancelRequest(session_id=session.id))
    await receiver.wait_for(lambda r: len(r) == 1)
    [finished] = receiver.verified(made.secret)
    assert (finished["data"]["outcome"], finished["data"]["reason"]) == ("failed", "CANCELLED")


async def test_only_the_kinds_labels_and_session_a_webhook_names_reach_it(client):
    with Receiver() as by_label, Receiver() as by_session, Receiver() as everything:
        first = await client.create_session(labels={"team": "docs"})
        second = await client.create_session(labels={"team": "ops"})
        await create(client, by_label.url, ["finished"], labels={"team": "docs"})
        await create(client, by_session.url, ["session_state"], session_id=second.id)
        await create(client, everything.url, ["*"])
        for session in (first, second):
            await client.run_all(session.id, "hello")
        await everything.wait_for(lambda r: len(r) >= 6)  # 2 × (RUNNING, IDLE, finished)
        await by_label.wait_for(lambda r: len(r) >= 1)
        await by_session.wait_for(lambda r: len(r) >= 2)
        await asyncio.sleep(0.5)
        [docs] = [r.payload() for r in by_label.requests()]
        assert (docs["type"], docs["data"]["session_id"]) == ("finished", first.id)
        states = [r.payload() for r in by_session.requests()]
        assert [p["type"] for p in states] == ["session_state", "session_state"]
        assert {p["data"]["session_id"] for p in states} == {second.id}
        kinds = sorted(r.payload()["type"] for r in everything.requests())
        assert kinds == ["finished"] * 2 + ["session_state"] * 4


async def test_a_webhook_hears_of_what_happens_after_it_is_made(client, receiver):
    session = await client.create_session()
    await client.run_all(session.id, "before")
    await create(client, receiver.url, ["finished"])
    await client.run_all(session.id, "after")
    [got] = await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.5)
    assert len(receiver.requests()) == 1
    assert "after" in got.payload()["data"]["event"]["finished"]["output"]


async def test_a_ping_is_sent_at_once_and_answered_with_its_attempt(client, receiver):
    made = await create(client, receiver.url)
    delivery = await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=made.webhook.id))
    assert delivery.type == "ping" and delivery.state == wh.DELIVERY_STATE_DELIVERED
    assert delivery.attempts[0].status == 200
    [ping] = receiver.verified(made.secret)
    assert ping["type"] == "ping" and ping["data"]["webhook_id"] == made.webhook.id


async def test_a_delivery_is_redelivered_with_the_same_id_and_body(client, receiver):
    made = await create(client, receiver.url, ["finished"])
    session = await client.create_session()
    await client.run_all(session.id, "hello")
    [first] = await receiver.wait_for(lambda r: len(r) == 1)
    listed = await client.call(
        "ListDeliveries", wh.ListDeliveriesRequest(webhook_id=made.webhook.id)
    )
    request = wh.RedeliverWebhookRequest(
        webhook_id=made.webhook.id, delivery_id=listed.deliveries[0].id
    )
    again = await client.call("RedeliverWebhook", request)
    assert again.state == wh.DELIVERY_STATE_PENDING
    [_, second] = await receiver.wait_for(lambda r: len(r) == 2)
    assert second.headers["webhook-id"] == first.headers["webhook-id"]
    assert second.body == first.body
    receiver.verified(made.secret)
    missing = wh.RedeliverWebhookRequest(webhook_id=made.webhook.id, delivery_id="dl_nope")
    await expect_error(client.call("RedeliverWebhook", missing), "not_found", "DELIVERY_NOT_FOUND")


async def test_deliveries_list_in_pages_newest_first(client, receiver):
    made = await create(client, receiver.url, ["session_state"])
    session = await client.create_session()
    for _ in range(3):
        await client.run_all(session.id, "hello")
    await receiver.wait_for(lambda r: len(r) == 6)
    seen, token = [], ""
    while True:
        page = await client.call(
            "ListDeliveries",
            wh.ListDeliveriesRequest(webhook_id=made.webhook.id, page_size=4, page_token=token),
        )
        seen += [d.seq for d in page.deliveries]
        token = page.next_page_token
        if not token:
            break
    assert len(seen) == 6 and seen == sorted(seen, reverse=True)
