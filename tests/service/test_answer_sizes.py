"""No answer outgrows a stock gRPC client, whatever a session holds.

A stock client refuses a message over 4 MiB. These tests talk to a real server through one
(grpc.aio with no options), where a parked request built from a huge file used to break
RunTurn, Watch, GetSession and everyone's ListSessions at once.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import httpx
import pytest

from blitz.server import RunningServer
from blitz.size_limits import GRPC_CLIENT_MAX
from blitz.v1 import session_pb2 as s
from blitz.v1 import session_pb2_grpc
from blitz.v1 import turn_pb2 as t


@pytest.fixture
def stock(channel: grpc.aio.Channel) -> session_pb2_grpc.SessionServiceStub:
    """A SessionService client with grpc's defaults: 4 MiB is the most it receives."""
    return session_pb2_grpc.SessionServiceStub(channel)


def workspace_of(server: RunningServer, session: s.Session) -> Path:
    return server.settings.workspace_root / session.workspace


async def park(
    stub: session_pb2_grpc.SessionServiceStub, session_id: str, text: str
) -> t.TurnEvent:
    """Run a turn until its first approval request; the turn stays parked."""
    call = stub.RunTurn(s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=text)))
    try:
        async for event in call:
            if event.HasField("approval_request"):
                return event
    finally:
        call.cancel()
    raise AssertionError("the turn did not park")


async def test_a_pending_delete_of_a_30_mb_file_breaks_no_call(server, stock):
    session = await stock.CreateSession(s.CreateSessionRequest())
    (workspace_of(server, session) / "big.log").write_text("a line of the log\n" * 1_700_000)

    parked = await park(stock, session.id, "delete big.log")

    assert "diff of 29.2 MB not shown" in parked.approval_request.diff
    got = await stock.GetSession(s.GetSessionRequest(session_id=session.id))
    assert [p.approval_request.request_id for p in got.pending] == [
        parked.approval_request.request_id
    ]
    listed = await stock.ListSessions(s.ListSessionsRequest())
    assert [x.id for x in listed.sessions] == [session.id]
    replay = [e async for e in stock.Watch(s.WatchRequest(session_id=session.id))]
    assert replay[-2].approval_request == parked.approval_request
    assert replay[-1].HasField("session_state"), "then the session says it is parked"


async def test_pages_of_sessions_with_large_pending_requests_fit_a_stock_client(server, stock):
    """Twenty parked deletes with a 256 KiB diff each: the listing pages instead of failing."""
    content = "".join(f"{i:05} {'x' * 74}\n" for i in range(4000))
    ids = []
    for _ in range(20):
        session = await stock.CreateSession(s.CreateSessionRequest())
        (workspace_of(server, session) / "f.txt").write_text(content)
        await park(stock, session.id, "delete f.txt")
        ids.append(session.id)

    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await stock.ListSessions(s.ListSessionsRequest(page_size=500, page_token=token))
        assert page.ByteSize() < GRPC_CLIENT_MAX
        pages += 1
        seen += [x.id for x in page.sessions]
        assert all(len(x.pending) == 1 for x in page.sessions)
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(ids), "every session listed once, none lost between pages"
    assert pages > 1


async def test_healthz_answers_while_a_15_mb_change_awaits_approval(server, stock):
    """Building the request of a 15 MB delete used to hold the event loop for seconds."""
    session = await stock.CreateSession(s.CreateSessionRequest())
    lines = "".join(f"line number {i}\n" for i in range(1_000_000))
    (workspace_of(server, session) / "big.txt").write_text(lines)
    slowest = 0.0
    parking = asyncio.create_task(park(stock, session.id, "delete big.txt"))
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        while not parking.done():
            started = time.perf_counter()
            assert (await http.get("/healthz")).status_code == 200
            slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.02)
    await parking
    assert slowest < 1.0
