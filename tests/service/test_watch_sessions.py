"""WatchSessions: the caller's sessions as they are, then each change, so that a list and a
session's own view always agree, on every wire; another principal's sessions never show;
a change made by one replica reaches a watcher of another. And GetServerInfo says who the
caller is, for a client's header."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from support.wire import Wire, open_wire, until

from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import session_pb2 as s

# Generous: a loaded machine may take a while; nothing here measures time.
WITHIN = 30


async def next_update(stream: AsyncIterator[s.SessionsUpdate]) -> s.SessionsUpdate:
    return await asyncio.wait_for(anext(stream), WITHIN)


async def until_session(
    stream: AsyncIterator[s.SessionsUpdate], session_id: str, **fields: object
) -> s.Session:
    """The stream's next view of `session_id` whose fields are `fields`."""
    while True:
        update = await next_update(stream)
        session = update.session
        if session.id == session_id and all(getattr(session, k) == v for k, v in fields.items()):
            return session


async def snapshot(stream: AsyncIterator[s.SessionsUpdate]) -> list[s.Session]:
    sessions = []
    while not (update := await next_update(stream)).synced:
        sessions.append(update.session)
    return sessions


@pytest.mark.parity
async def test_a_list_follows_its_sessions_from_creation_to_deletion(wire: Wire) -> None:
    old = await wire.create_session(title="old")
    stream = wire.stream("WatchSessions", s.WatchSessionsRequest())
    try:
        assert [x.id for x in await snapshot(stream)] == [old.id]
        new = await wire.create_session()
        await until_session(stream, new.id, state=s.SESSION_STATE_IDLE)
        # A turn that parks, then is decided: the list says so, as the session does.
        turn = wire.run(new.id, "$ echo hi")
        asked = await until(turn, "approval_request")
        parked = await until_session(stream, new.id, state=s.SESSION_STATE_PARKED)
        assert parked.pending[0].approval_request.request_id == asked.approval_request.request_id
        assert parked.title == "$ echo hi"  # titled from its first prompt
        await wire.decide(new.id, asked, "once")
        await until(turn, "finished")
        await turn.aclose()
        idle = await until_session(stream, new.id, state=s.SESSION_STATE_IDLE)
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=new.id))
        assert (idle.state, idle.turn_id, idle.usage) == (got.state, got.turn_id, got.usage)
        # A rename writes no event: it shows all the same.
        rename = s.UpdateSessionRequest(
            session_id=old.id, title="renamed", update_mask=FieldMask(paths=["title"])
        )
        await wire.call("UpdateSession", rename)
        await until_session(stream, old.id, title="renamed")
        await wire.call("DeleteSession", s.DeleteSessionRequest(session_id=old.id))
        while (update := await next_update(stream)).deleted_id != old.id:
            assert update.HasField("session")
    finally:
        await stream.aclose()


async def test_labels_narrow_the_list(wire: Wire) -> None:
    await wire.create_session(labels={"team": "web"})
    mine = await wire.create_session(labels={"team": "docs"})
    stream = wire.stream("WatchSessions", s.WatchSessionsRequest(labels={"team": "docs"}))
    try:
        assert [x.id for x in await snapshot(stream)] == [mine.id]
        other = await wire.create_session(labels={"team": "web"})
        also = await wire.create_session(labels={"team": "docs"})
        seen = await until_session(stream, also.id)
        assert seen.id != other.id
    finally:
        await stream.aclose()


async def test_another_principals_sessions_never_show(settings: Settings) -> None:
    tokens = "alice:alice-token-1234,bob:bob-token-5678"
    async with running_server(replace(settings, tokens=tokens)) as server:
        alice = open_wire("grpc", server, {"authorization": "Bearer alice-token-1234"})
        bob = open_wire("connect", server, {"authorization": "Bearer bob-token-5678"})
        stream = bob.stream("WatchSessions", s.WatchSessionsRequest())
        try:
            await alice.create_session(title="alice's")
            assert await snapshot(stream) == []
            hers = await alice.create_session(title="alice's too")
            await alice.run_all(hers.id, "hello")
            his = await bob.create_session(title="bob's")
            # The first thing bob hears of is his own session.
            assert (await until_session(stream, his.id)).title == "bob's"
        finally:
            await stream.aclose()
            await alice.close()
            await bob.close()


@pytest.mark.engines("postgres")
async def test_a_change_on_one_replica_reaches_a_watcher_of_another(settings: Settings) -> None:
    async with running_server(settings) as first, running_server(settings) as second:
        watcher = open_wire("grpc", first)
        actor = open_wire("connect", second)
        stream = watcher.stream("WatchSessions", s.WatchSessionsRequest())
        try:
            await snapshot(stream)
            session = await actor.create_session(title="elsewhere")
            await actor.run_all(session.id, "hello")
            seen = await until_session(stream, session.id)
            assert seen.title == "elsewhere"
        finally:
            await stream.aclose()
            await watcher.close()
            await actor.close()


async def test_server_info_says_who_the_caller_is(settings: Settings) -> None:
    tokens = "alice:alice-token-1234,root:root-token-9012:admin"
    async with running_server(replace(settings, tokens=tokens)) as server:
        for token, who in (
            ("alice-token-1234", ("alice", False)),
            ("root-token-9012", ("root", True)),
        ):
            wire = open_wire("connect", server, {"authorization": f"Bearer {token}"})
            try:
                info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
            finally:
                await wire.close()
            assert (info.principal, info.admin) == who
