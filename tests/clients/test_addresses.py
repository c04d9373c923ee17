"""A client given several addresses: which it uses, and when it moves on to the next.

The replicas' side (a replica killed mid-stream) is in tests/replicas/test_sdk_failover.py;
here one real server stands behind the live address, and the other is either nothing at
all (a closed port) or a listener that takes the request and resets the connection, as a
server killed while it handles a call does.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from pyqwest import ConnectTimeout
from support.servers import free_port

from blitz.server import RunningServer
from blitz_client import AsyncBlitz, Blitz, BlitzError
from blitz_client._connect import _error as connect_error


def live(server: RunningServer, kind: str) -> str:
    return server.grpc_target if kind == "grpc" else server.http_url


def nowhere(kind: str) -> str:
    """An address where nothing listens."""
    return f"127.0.0.1:{free_port()}" if kind == "grpc" else f"http://127.0.0.1:{free_port()}"


def test_addresses_are_a_sequence_or_one_string_with_commas():
    with Blitz(["127.0.0.1:1", "127.0.0.1:2"]) as blitz:
        assert blitz.urls == ("127.0.0.1:1", "127.0.0.1:2")
        assert blitz.url == "127.0.0.1:1", "the first is in use to begin with"
    client = AsyncBlitz("http://a:8080, http://b:8080")
    assert client.urls == ("http://a:8080", "http://b:8080")
    assert AsyncBlitz("127.0.0.1:1").urls == ("127.0.0.1:1",)


@pytest.mark.parametrize("client_class", [AsyncBlitz, Blitz])
def test_addresses_of_both_transports_or_an_empty_one_are_a_value_error(client_class):
    with pytest.raises(ValueError, match=r"all be Connect URLs .* or all gRPC targets"):
        client_class(["127.0.0.1:50051", "http://127.0.0.1:8080"])
    with pytest.raises(ValueError, match="not a mix"):
        client_class("https://a:8080,b:50051")
    for empty in ("", "a:1,,b:1", []):
        with pytest.raises(ValueError, match="an empty server address"):
            client_class(empty)


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_first_address_where_nothing_listens_is_passed_over(server, kind):
    """Even for a call that is not sent twice: it never left, so nothing was done."""
    async with AsyncBlitz([nowhere(kind), live(server, kind)], reconnect_timeout=30) as client:
        session = await asyncio.wait_for(client.create_session(title="second"), 20)
        assert client.url == live(server, kind)
        events = [e async for e in client.run(session.id, "hello")]
        assert not events[-1].finished.HasField("error")
        assert [s.title async for s in client.sessions()] == ["second"], "created once"


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_stream_passes_over_a_first_address_where_nothing_listens(server, kind):
    async with AsyncBlitz(live(server, kind)) as setup:
        session = await setup.create_session()
        done = [e async for e in setup.run(session.id, "hello")]
    async with AsyncBlitz([nowhere(kind), live(server, kind)]) as client:
        replayed = [e async for e in client.watch(session.id, follow=False)]
    assert replayed == done


async def test_the_sync_client_passes_over_a_dead_first_address_too(server):
    def script() -> tuple[str, str]:
        with Blitz([nowhere("grpc"), server.grpc_target]) as blitz:
            return blitz.create_session(title="sync").title, blitz.url

    assert await asyncio.to_thread(script) == ("sync", server.grpc_target)


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_when_every_address_refuses_a_call_fails_after_one_round(kind):
    async with AsyncBlitz([nowhere(kind), nowhere(kind)], reconnect_timeout=30) as client:
        with pytest.raises(BlitzError) as caught:
            await asyncio.wait_for(client.create_session(), 20)
        assert caught.value.code == "unavailable" and not caught.value.sent
        with pytest.raises(BlitzError):
            await asyncio.wait_for(client.session("s_1"), 20)
        with pytest.raises(BlitzError):
            await asyncio.wait_for(_events(client.watch("s_1")), 20)


async def test_a_connect_timeout_over_connect_is_a_call_never_sent():
    """connectrpc reports pyqwest's ConnectTimeout as `deadline_exceeded`; it must move the
    client on as a refused connection does. (No test here can make a connection hang for
    pyqwest's 30 s, so this checks the translation alone.)"""
    try:
        raise ConnectError(Code.DEADLINE_EXCEEDED, "Request timed out") from ConnectTimeout()
    except ConnectError as exc:
        error = connect_error(exc)
    assert isinstance(error, BlitzError)
    assert (error.code, error.sent) == ("deadline_exceeded", False)


# HTTP/2's connection preface, and a SETTINGS frame and its acknowledgement: enough of a
# server for a gRPC client to send its call.
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"


async def _take_the_request_and_reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
    """Read one request (gRPC: up to its HEADERS frame; Connect: its HTTP head), then
    reset the connection: the client cannot know whether the call was carried out."""
    try:
        if await reader.readexactly(len(_PREFACE)) == _PREFACE:
            writer.write(_SETTINGS)
            while True:
                header = await reader.readexactly(9)
                await reader.readexactly(int.from_bytes(header[:3], "big"))
                if header[3] == 1 and int.from_bytes(header[5:9], "big"):  # a call's HEADERS
                    break
        else:
            await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()  # with SO_LINGER 0: a RST, not a FIN


@pytest.fixture
async def resetting() -> AsyncIterator[int]:
    """The port of a listener that takes each request and resets its connection."""
    listener = await asyncio.start_server(_take_the_request_and_reset, "127.0.0.1", 0)
    async with listener:
        yield listener.sockets[0].getsockname()[1]


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_a_call_that_may_have_been_done_is_not_sent_again_but_a_read_is(
    server, resetting, kind
):
    """A reset after the request left: CreateSession fails as it does with one address
    (sent twice it could make two sessions), and the client moves on; a read is sent on."""
    first = f"127.0.0.1:{resetting}" if kind == "grpc" else f"http://127.0.0.1:{resetting}"
    async with AsyncBlitz([first, live(server, kind)]) as client:
        with pytest.raises(BlitzError) as caught:
            await asyncio.wait_for(client.create_session(), 20)
        assert caught.value.code == "unavailable" and caught.value.sent
        assert client.url == live(server, kind), "the next call goes to the other"
        session = await client.create_session(title="made once")
    assert [s.title async for s in _sessions(server, kind)] == ["made once"]

    async with AsyncBlitz([first, live(server, kind)]) as client:
        got = await asyncio.wait_for(client.session(session.id), 20)
        assert got.title == "made once" and client.url == live(server, kind)


async def _sessions(server: RunningServer, kind: str) -> AsyncIterator[object]:
    async with AsyncBlitz(live(server, kind)) as client:
        async for session in client.sessions():
            yield session


async def _events(stream: AsyncIterator[object]) -> list[object]:
    return [event async for event in stream]
