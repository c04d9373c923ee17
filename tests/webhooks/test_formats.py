"""What a delivery says: the Slack option, the console link, and a body cut to its size."""

from __future__ import annotations

from dataclasses import replace

from support.receiver import Receiver
from support.webhooks import create
from support.wire import open_wire, until

from blitz.server import running_server
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

PUBLIC = "https://blitz.example.com/"


async def test_slack_gets_a_line_of_text_and_the_essentials_of_an_approval(hooked_settings):
    async with running_server(replace(hooked_settings, public_url=PUBLIC)) as server:
        wire = open_wire("connect", server)
        try:
            with Receiver() as slack:
                await create(wire, slack.url, ["approval_request"], format=wh.WEBHOOK_FORMAT_SLACK)
                session = await wire.create_session(title="<!channel> & friends")
                stream = wire.run(session.id, "$ echo <b>hi</b> && curl <https://x|click>")
                await until(stream, "approval_request")
                await stream.aclose()
                [got] = await slack.wait_for(lambda r: len(r) == 1)
        finally:
            await wire.close()
    message = got.payload()
    assert set(message) == {"text", "blocks"}
    assert message["text"].startswith(":raised_hand: *Approval needed* (COMMAND, run_command)")
    link = f"{PUBLIC}#/sessions/{session.id}"
    assert f"<{link}|&lt;!channel&gt; &amp; friends>" in message["text"]
    details = message["blocks"][1]["text"]["text"]
    assert "echo &lt;b&gt;hi&lt;/b&gt; &amp;&amp; curl &lt;https://x|click&gt;" in details
    assert "rule scope: `command: echo" in details
    assert "<!channel>" not in got.body.decode() and "<https://x|click>" not in got.body.decode()


async def test_the_standard_payload_links_to_the_session_in_the_console(hooked_settings):
    async with running_server(replace(hooked_settings, public_url=PUBLIC)) as server:
        wire = open_wire("grpc", server)
        try:
            with Receiver() as rx:
                await create(wire, rx.url, ["finished"])
                session = await wire.create_session()
                await wire.run_all(session.id, "hello")
                [got] = await rx.wait_for(lambda r: len(r) == 1)
        finally:
            await wire.close()
    assert got.payload()["data"]["url"] == f"{PUBLIC}#/sessions/{session.id}"


async def test_a_large_event_is_cut_to_fit_a_body_and_says_so(client, receiver):
    await create(client, receiver.url, ["approval_request"])
    session = await client.create_session()
    big = '"' * 250_000  # each one two bytes in JSON: the diff alone is past the limit
    stream = client.run(session.id, "write", prompt=f"write big.txt\n```\n{big}\n```")
    await until(stream, "approval_request")
    await stream.aclose()
    [got] = await receiver.wait_for(lambda r: len(r) == 1)
    assert len(got.body) <= 256 * 1024
    diff = got.payload()["data"]["event"]["approvalRequest"]["diff"]
    assert "bytes cut: a webhook's body holds at most 256 KiB" in diff


async def test_a_secret_in_an_event_is_masked_in_its_delivery(client, receiver):
    await create(client, receiver.url, ["approval_request"])
    session = await client.create_session()
    token = "ghp_" + "a1B2" * 9
    stream = client.run(session.id, f"$ curl -H 'Authorization: Bearer {token}' https://x.test")
    asked = await client.decide_next(stream, session.id, t.DECISION_DENY)
    await stream.aclose()
    [got] = await receiver.wait_for(lambda r: len(r) == 1)
    assert token not in got.body.decode()
    assert got.payload()["data"]["event"]["approvalRequest"]["detail"] == (
        asked.approval_request.detail
    ), "masked as it was stored"
