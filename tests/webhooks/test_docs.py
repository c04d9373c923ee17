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
import subprocess
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
# What the TypeScript receiver test installs: standardwebhooks and esbuild, pinned.
_TS_PROJECT = Path(__file__).resolve().parent / "typescript"


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


@pytest.fixture(scope="module")
def ts_modules(tmp_path_factory: pytest.TempPathFactory) -> str:
    """node_modules with standardwebhooks and esbuild, as pinned in tests/webhooks/typescript
    (`npm ci` in a copy; BLITZ_TS_MODULES names one already made)."""
    if given := os.environ.get("BLITZ_TS_MODULES"):
        return given
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unable("no node and npm on PATH")
    folder = tmp_path_factory.mktemp("ts-receiver")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(_TS_PROJECT / name, folder / name)
    installed = subprocess.run(
        ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
        cwd=folder, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if installed.returncode != 0:
        _unable(f"npm ci failed (no registry, and not in npm's cache?): {installed.stderr[-500:]}")
    return str(folder / "node_modules")


def _unable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the TypeScript receiver cannot be built in CI: {why}")
    pytest.skip(f"TypeScript receiver skipped: {why}")


# npm ci with a cold cache downloads the packages: more than the suite's 120 s default.
@pytest.mark.timeout(600)
async def test_the_docs_typescript_receiver_verifies_what_blitz_sends(client, tmp_path, ts_modules):
    modules = ts_modules
    node = shutil.which("node")
    assert node is not None
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
