"""The replicated Compose setup's proxy, run: nginx with docker/proxy/blitz.conf in front of
two real replicas on one PostgreSQL database (the `proxied` fixture, support/proxy.py).

Compose does not run here; what it adds (the replicas' names, the published ports) is
swapped in, and everything else is the shipped file. Clients talk to the proxy only, over
gRPC (h2c) and Connect, with a bearer token that only the replicas check.
"""

from __future__ import annotations

import asyncio

import pytest
from support.images import PNG
from support.proxy import TOKEN, Call, Proxy
from support.replicas import Replica
from support.wire import Wire, decide, drive, open_wire

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError

ONCE = t.DECISION_ONCE
AUTH = {"authorization": f"Bearer {TOKEN}"}
KINDS = ("grpc", "connect")


def upstream(replica: Replica, kind: str) -> str:
    """The address the proxy reaches `replica` at for `kind` of call."""
    return replica.grpc_target if kind == "grpc" else replica.http_url.removeprefix("http://")


def served_by(calls: list[Call], proxy: Proxy, kind: str) -> set[str]:
    """The replicas that answered the calls of `kind` among `calls`."""
    port = proxy.grpc_port if kind == "grpc" else proxy.http_port
    return {call.upstreams[-1] for call in calls if call.port == port}


async def a_turn(wire: Wire) -> tuple[str, list[t.TurnEvent]]:
    """A session and a turn that waits for an approval, approved: the session and its events.

    The approval request must reach the client while the turn waits for the answer, so a
    proxy that held a streamed response back would leave this waiting (and failing).
    """
    session = await wire.create_session(title=f"through the proxy, over {wire.name}")
    async with asyncio.timeout(60):
        events = await drive(wire, session.id, "$ echo hi", decide(wire, session.id, ONCE))
    assert [e.WhichOneof("kind") for e in events if e.HasField("approval_request")]
    [result] = [e.tool_result.result for e in events if e.HasField("tool_result")]
    assert result["output"] == "hi\n"
    assert events[-1].HasField("finished") and not events[-1].finished.HasField("error")
    return session.id, events


async def test_grpc_and_connect_run_turns_through_the_proxy_on_both_replicas(proxied):
    proxy, (a, b) = proxied
    for kind in KINDS:
        stranger = open_wire(kind, proxy)  # type: ignore[arg-type]  # has both addresses
        try:
            with pytest.raises(BlitzError) as refused:
                await stranger.create_session()
        finally:
            await stranger.close()
        assert refused.value.code == "unauthenticated", kind

        wire = open_wire(kind, proxy, AUTH)  # type: ignore[arg-type]
        try:
            session_id, events = await a_turn(wire)
            watched = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session_id))]
            assert watched == events, "Watch replays the turn, whichever replica answers it"
            for _ in range(4):
                assert (await wire.create_session()).id
            # Past nginx's default 1 MiB request limit, within Blitz's own.
            big = PNG + b"\0" * (4_700_000 - len(PNG))
            upload = w.UploadImageRequest(session_id=session_id, data=big, media_type="image/png")
            assert (await wire.call("UploadImage", upload)).size == len(big)
        finally:
            await wire.close()

    calls = proxy.calls()
    for kind in KINDS:
        assert served_by(calls, proxy, kind) == {upstream(a, kind), upstream(b, kind)}, calls
    assert {call.status for call in calls} == {200, 401}, "401: a refused Connect call"
    assert all(len(call.upstreams) == 1 for call in calls), "no replica was skipped"


async def test_a_replica_stopped_with_sigterm_leaves_the_other_serving_every_call(proxied):
    proxy, (a, b) = proxied
    wires = [open_wire(kind, proxy, AUTH) for kind in KINDS]  # type: ignore[arg-type]
    try:
        before = [await wire.create_session() for wire in wires for _ in range(2)]
        assert await asyncio.to_thread(a.stop) == 0, "a drained and exited"
        since = len(proxy.calls())

        for wire in wires:
            for session in before:
                got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
                assert got.id == session.id
            for _ in range(3):
                assert (await wire.create_session()).id
            await a_turn(wire)
    finally:
        for wire in wires:
            await wire.close()

    after = proxy.calls()[since:]
    assert after and {call.status for call in after} == {200}, after
    for kind in KINDS:
        assert served_by(after, proxy, kind) == {upstream(b, kind)}, after
    tried_a = [call for call in after if len(call.upstreams) > 1]
    assert all(call.upstreams[0] in {upstream(a, k) for k in KINDS} for call in tried_a)
    assert b.process is not None and b.process.poll() is None
