"""fetch_url: grants, NETWORK approvals, the address block, redirects, HTML reduced to text."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from google.protobuf import json_format

from blitz.agent import Agent, FetchLimits
from blitz.ports import Completed, TurnPolicy
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO

PAGE = (
    b"<html><head><style>x{}</style></head>"
    b"<body><h1>Title</h1><p>Hello <b>web</b>.</p></body></html>"
)


@contextlib.asynccontextmanager
async def web(routes: dict[str, tuple[int, dict[str, str], bytes]]) -> AsyncIterator[int]:
    """A tiny HTTP server on 127.0.0.1: path -> (status, headers, body)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        path = line.decode().split(" ")[1]
        status, headers, body = routes.get(path, (404, {}, b"missing"))
        head = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", "connection: close"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def local_agent() -> Agent:
    return Agent(fetch=FetchLimits(allow_local=True))


def result_of(io: RecordingIO) -> dict[str, object]:
    [result] = io.of_kind("tool_result")
    return json_format.MessageToDict(result.tool_result.result)


async def test_loopback_is_refused_even_when_granted(workspace: Path, io: RecordingIO) -> None:
    done = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="fetch http://127.0.0.1:9/secret",
        policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
    )
    assert isinstance(done, Completed)
    assert io.asked == []
    assert "is blocked" in str(result_of(io)["error"])
    assert "server does not allow local fetches" in str(result_of(io)["error"])


async def test_a_granted_host_is_fetched_without_asking_and_html_becomes_text(
    workspace: Path, io: RecordingIO
) -> None:
    async with web({"/": (200, {"content-type": "text/html"}, PAGE)}) as port:
        done = await local_agent().start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt=f"fetch http://127.0.0.1:{port}/",
            policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
        )
    assert isinstance(done, Completed) and io.asked == []
    result = result_of(io)
    assert result["status"] == 200
    assert result["content"] == "Title\n\nHello web."


async def test_an_ungranted_host_needs_a_network_approval(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    driver = make_driver(fetch=FetchLimits(allow_local=True))
    async with web({"/a": (200, {"content-type": "text/plain"}, b"plain text")}) as port:
        done = await driver.run(f"fetch http://localhost:{port}/a", io=io)
    request = driver.parks[0].requests[0].approval_request
    assert request.kind == turn_pb2.ACTION_KIND_NETWORK
    assert request.scope_label == "network: localhost"
    assert "plain text" in done.output


async def test_a_redirect_to_another_host_is_checked_again(
    workspace: Path, io: RecordingIO
) -> None:
    async with web({"/": (302, {"location": "http://localhost:1/elsewhere"}, b"")}) as port:
        await local_agent().start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt=f"fetch http://127.0.0.1:{port}/",
            policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
        )
    error = str(result_of(io)["error"])
    assert "'localhost'" in error and "fetch that URL directly" in error


async def test_an_aside_may_not_ask_to_fetch(workspace: Path, io: RecordingIO) -> None:
    outcome = await local_agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="fetch http://localhost:9/x",
        policy=TurnPolicy(aside=True),
    )
    assert isinstance(outcome, Completed) and io.asked == []
    assert "side question" in str(result_of(io)["error"])


async def test_a_malformed_url_is_an_error_result(workspace: Path, io: RecordingIO) -> None:
    done = await Agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="fetch http://[::1",
        policy=TurnPolicy(),
    )
    assert isinstance(done, Completed)
    assert "not a valid URL" in str(result_of(io)["error"])


async def test_a_host_that_does_not_answer_is_an_error_result_in_our_words(
    workspace: Path, io: RecordingIO
) -> None:
    async with web({}) as port:
        pass  # the port is closed again: nothing listens there now
    with structlog.testing.capture_logs() as logs:
        done = await local_agent().start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt=f"fetch http://127.0.0.1:{port}/",
            policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
        )
    assert isinstance(done, Completed)
    assert result_of(io)["error"] == (
        "the request to 127.0.0.1 failed (ConnectError): it could not be sent, "
        "or its answer broke off"
    )
    [logged] = [e for e in logs if e["event"] == "fetch_failed"]
    assert logged["host"] == "127.0.0.1"
    assert str(logged["exc_info"]) == "All connection attempts failed"


async def test_a_charset_that_is_no_text_encoding_is_read_as_utf8(
    workspace: Path, io: RecordingIO
) -> None:
    headers = {"content-type": "text/plain; charset=base64"}
    async with web({"/": (200, headers, "héllo".encode())}) as port:
        done = await local_agent().start(
            io=io,
            model="demo",
            workspace=workspace,
            history=None,
            prompt=f"fetch http://127.0.0.1:{port}/",
            policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
        )
    assert isinstance(done, Completed)
    assert result_of(io)["content"] == "héllo"
