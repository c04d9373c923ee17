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
from blitz.ports import ApprovalResult, Completed, Resolution, TurnPolicy
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


def deny(request: turn_pb2.TurnEvent) -> Resolution:
    return ApprovalResult(approved=False, reason="no")


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
    assert request.scope_label == f"network: http://localhost:{port}"
    assert request.detail == f"GET http://localhost:{port}/a (http://localhost:{port})"
    assert "plain text" in done.output


async def test_an_approval_names_the_default_port_of_its_scheme(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    """An https URL without a port is approved as port 443, and nothing else of the host."""
    driver = make_driver(fetch=FetchLimits(allow_local=True))
    await driver.run("fetch https://localhost/x", io=io, decide=deny)
    request = driver.parks[0].requests[0].approval_request
    assert request.scope_label == "network: https://localhost:443"


async def test_an_approval_does_not_cover_a_redirect_to_another_port_of_the_host(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    """Approving one port of 127.0.0.1 lets no redirect reach another (Blitz's own, say)."""
    async with web({"/inside": (200, {"content-type": "text/plain"}, b"secret")}) as inner:
        hop = (302, {"location": f"http://127.0.0.1:{inner}/inside"}, b"")
        async with web({"/": hop}) as outer:
            driver = make_driver(fetch=FetchLimits(allow_local=True))
            await driver.run(f"fetch http://127.0.0.1:{outer}/", io=io)
    [park] = driver.parks
    assert park.requests[0].approval_request.scope_label == f"network: http://127.0.0.1:{outer}"
    result = result_of(io)
    assert "content" not in result
    error = str(result["error"])
    assert f"http://127.0.0.1:{inner}" in error and "fetch that URL directly" in error


async def test_a_redirect_within_the_approved_origin_is_followed(
    make_driver: Callable[..., Driver], io: RecordingIO
) -> None:
    routes = {
        "/": (302, {"location": "/next"}, b""),
        "/next": (200, {"content-type": "text/plain"}, b"arrived"),
    }
    async with web(routes) as port:
        driver = make_driver(fetch=FetchLimits(allow_local=True))
        await driver.run(f"fetch http://127.0.0.1:{port}/", io=io)
    assert len(driver.parks) == 1
    assert result_of(io)["content"] == "arrived"


async def test_a_grant_written_as_an_origin_covers_that_origin_alone(
    workspace: Path, io: RecordingIO
) -> None:
    """`http://127.0.0.1:P` grants port P; a redirect to another port of the host is refused."""
    async with web({"/x": (200, {"content-type": "text/plain"}, b"other port")}) as other:
        hop = (302, {"location": f"http://127.0.0.1:{other}/x"}, b"")
        async with web({"/": hop}) as port:
            done = await local_agent().start(
                io=io,
                model="demo",
                workspace=workspace,
                history=None,
                prompt=f"fetch http://127.0.0.1:{port}/",
                policy=TurnPolicy(fetch_grants=(f"http://127.0.0.1:{port}",)),
            )
    assert isinstance(done, Completed) and io.asked == []
    assert "fetch that URL directly" in str(result_of(io)["error"])


async def test_a_bare_host_grant_covers_every_port_of_the_host(
    workspace: Path, io: RecordingIO
) -> None:
    async with web({"/x": (200, {"content-type": "text/plain"}, b"other port")}) as other:
        hop = (302, {"location": f"http://127.0.0.1:{other}/x"}, b"")
        async with web({"/": hop}) as port:
            done = await local_agent().start(
                io=io,
                model="demo",
                workspace=workspace,
                history=None,
                prompt=f"fetch http://127.0.0.1:{port}/",
                policy=TurnPolicy(fetch_grants=("127.0.0.1",)),
            )
    assert isinstance(done, Completed) and io.asked == []
    assert result_of(io)["content"] == "other port"


async def test_a_refused_host_name_is_explained_in_our_words(
    workspace: Path, io: RecordingIO
) -> None:
    """A host name the IDNA codec rejects is refused without the codec's own text."""
    done = await local_agent().start(
        io=io,
        model="demo",
        workspace=workspace,
        history=None,
        prompt="fetch http://a..b/",
        policy=TurnPolicy(),
    )
    assert isinstance(done, Completed) and io.asked == []
    error = str(result_of(io)["error"])
    assert "codec" not in error and "UnicodeError" not in error
    assert "cannot be used" in error


async def test_a_host_name_is_looked_up_only_once_the_fetch_is_approved(
    make_driver: Callable[..., Driver], io: RecordingIO, monkeypatch
) -> None:
    """The lookup itself leaves the machine: a denied fetch must not have made one."""
    import pydantic_ai._ssrf as ssrf

    looked_up: list[str] = []
    real = ssrf.resolve_hostname

    async def recorded(hostname: str) -> list[str]:
        looked_up.append(hostname)
        return await real(hostname)

    monkeypatch.setattr(ssrf, "resolve_hostname", recorded)
    driver = make_driver(fetch=FetchLimits(allow_local=True))
    await driver.run("fetch http://not-approved.example/page", io=io, decide=deny)
    assert driver.parks, "it asked"
    assert looked_up == [], "and looked nothing up before the answer"


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
