"""The webhook examples of the README and docs/webhooks.md run, against a real server.

The TypeScript receiver runs where Node and an `npm install standardwebhooks esbuild` are
at hand: `BLITZ_TS_MODULES` names that node_modules folder (without it, that one test is
skipped, saying so).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from support.readme import block
from support.servers import free_port
from support.webhooks import create
from support.wire import decide, drive

from blitz.config import load_settings
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

DOC = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()


def doc_block(lang: str, after: str = "") -> str:
    section = DOC[DOC.index(after) :] if after else DOC
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block in docs/webhooks.md"
    return match.group(1)


async def lines_of(proc: asyncio.subprocess.Process, count: int) -> list[str]:
    assert proc.stdout is not None
    got = []
    async with asyncio.timeout(60):
        while len(got) < count:
            got.append((await proc.stdout.readline()).decode().strip())
    return got


async def wait_for_port(port: int) -> None:
    async with asyncio.timeout(30):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return


async def test_the_readmes_receiver_verifies_what_blitz_sends(client, tmp_path):
    port = free_port()
    code = block("### Get told when a turn waits", "python").replace("9000", str(port))
    made = await create(client, f"http://127.0.0.1:{port}/", ["approval_request", "finished"])
    script = tmp_path / "receiver.py"
    script.write_text(code)
    env = {**os.environ, "SECRET": made.secret}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), env=env, stdout=asyncio.subprocess.PIPE
    )
    try:
        await wait_for_port(port)
        ping = await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=made.webhook.id))
        assert ping.state == wh.DELIVERY_STATE_DELIVERED and ping.attempts[0].status == 204
        session = await client.create_session()
        await drive(client, session.id, "$ echo hello", decide(client, session.id, t.DECISION_ONCE))
        printed = await lines_of(proc, 3)
    finally:
        proc.kill()
        await proc.wait()
    assert printed == ["ping", f"approval_request {session.id}", f"finished {session.id}"]


async def test_the_docs_python_verifier_verifies_a_delivery(client, receiver):
    made = await create(client, receiver.url)
    await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=made.webhook.id))
    [request] = receiver.requests()
    namespace: dict[str, object] = {}
    exec(doc_block("python", "Python (`pip install standardwebhooks`)"), namespace)
    payload = namespace["verified"](made.secret, request.body, request.headers)  # type: ignore[operator]
    assert payload["type"] == "ping"


def test_the_docs_declarations_are_a_valid_configuration(tmp_path):
    path = tmp_path / "blitz.toml"
    path.write_text(doc_block("toml"))
    ops, chat = load_settings({}, {}, config=str(path)).webhooks
    assert (ops.name, ops.principal, chat.format) == ("ops", "alice", "slack")


async def test_the_docs_typescript_receiver_verifies_what_blitz_sends(client, tmp_path):
    modules = os.environ.get("BLITZ_TS_MODULES", "")
    node = shutil.which("node")
    if not (node and modules and (Path(modules) / "standardwebhooks").is_dir()):
        pytest.skip("no Node with standardwebhooks and esbuild (set BLITZ_TS_MODULES)")
    source = tmp_path / "receiver.ts"
    source.write_text(doc_block("typescript"))
    bundled = tmp_path / "receiver.js"
    build = (
        "require('esbuild').buildSync({entryPoints: [process.argv[1]], bundle: true,"
        " platform: 'node', outfile: process.argv[2], nodePaths: [process.env.NODE_PATH]})"
    )
    bundling = await asyncio.create_subprocess_exec(
        node, "-e", build, str(source), str(bundled), env={**os.environ, "NODE_PATH": modules}
    )
    assert await asyncio.wait_for(bundling.wait(), 60) == 0, "esbuild bundles the example"
    port = free_port()
    made = await create(client, f"http://127.0.0.1:{port}/", ["approval_request", "finished"])
    env = {**os.environ, "SECRET": made.secret, "PORT": str(port)}
    proc = await asyncio.create_subprocess_exec(
        node, str(bundled), env=env, stdout=asyncio.subprocess.PIPE
    )
    try:
        await wait_for_port(port)
        ping = await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=made.webhook.id))
        assert ping.attempts[0].status == 204
        session = await client.create_session()
        await drive(client, session.id, "$ echo hello", decide(client, session.id, t.DECISION_ONCE))
        printed = await lines_of(proc, 3)
    finally:
        proc.kill()
        await proc.wait()
    assert printed == ["ping", f"approval_request {session.id}", f"finished {session.id}"]
