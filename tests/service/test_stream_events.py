"""What the stream tells a client beyond text and tools (issue 12's seed rows), on every wire.

An approval says when it expires and what then happens; each model call streams its usage;
trimming is a structured event; the session's busy, parked, idle and closed states are
pushed, and a closed session's Watch ends; a command's live output carries its call id and
its sub-agent's name; a tool result says whether it failed and how long it ran; the file
tools say which files they changed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from google.protobuf.duration_pb2 import Duration
from support.servers import make_settings, serving
from support.wire import Wire, decide, drive, until

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

KINDS = ["core", "grpc", "connect"]
State = t.SessionStateChange


def of(events: list[t.TurnEvent], kind: str) -> list[t.TurnEvent]:
    return [e for e in events if e.WhichOneof("kind") == kind]


async def watch_all(wire: Wire, session_id: str, after_seq: int = 0) -> list[t.TurnEvent]:
    request = s.WatchRequest(session_id=session_id, after_seq=after_seq)
    return [e async for e in wire.stream("Watch", request)]


@pytest.mark.parity
async def test_an_approval_says_when_it_expires_and_that_it_is_then_denied(wire):
    session = await wire.create_session(approval_timeout=Duration(seconds=300))
    stream = wire.run(session.id, "$ echo hi")
    try:
        asked = (await until(stream, "approval_request")).approval_request
    finally:
        await stream.aclose()
    assert asked.on_expire == t.EXPIRY_ACTION_DENY
    left = asked.expire_time.ToNanoseconds() / 1e9 - time.time()
    assert 290 < left <= 300, "an absolute time, the approval timeout from now"
    [pending] = (await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))).pending
    assert pending.approval_request.expire_time == asked.expire_time

    untimed = await wire.create_session()
    stream = wire.run(untimed.id, "ask: which one? [a|b]")
    try:
        question = (await until(stream, "question")).question
    finally:
        await stream.aclose()
    assert not question.HasField("expire_time") and question.on_expire == 0, "no timeout"


@pytest.mark.parity
async def test_each_model_call_streams_its_own_usage(wire):
    session = await wire.create_session()
    events = await drive(wire, session.id, "$ echo hi", decide(wire, session.id, t.DECISION_ONCE))
    calls = [e.usage for e in of(events, "usage")]
    assert len(calls) == 2, "one model call asks to run the command, one answers after it"
    assert all(c.calls == 1 and c.model == "demo" and c.priced for c in calls)
    assert all(c.input > 0 and not c.tokens_unknown for c in calls), "the demo model reports"
    assert all(not e.turn_id or e.turn_id == events[0].turn_id for e in of(events, "usage"))
    finished = events[-1].finished
    assert sum(c.input for c in calls) == finished.after.input - finished.before.input
    report = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    assert [e.input for e in report.entries] == [c.input for c in calls]
    assert not report.total.tokens_unknown


@pytest.mark.parametrize("kind", KINDS)
async def test_trimmed_history_is_a_structured_event(tmp_path: Path, kind: str):
    async with serving(make_settings(tmp_path / "data", history_turns=2), kind) as wire:
        session = await wire.create_session()
        for n in range(3):
            events = await wire.run_all(session.id, f"turn {n}")
    [trimmed] = [e.history_trimmed for e in of(events, "history_trimmed")]
    assert (trimmed.reason, trimmed.kept_turns) == ("history_turns", 1)
    assert trimmed.dropped_messages == 4, "two whole turns of a prompt and an answer"
    assert not of(events, "notice"), "no free-text notice beside it"


@pytest.mark.parity
async def test_watchers_are_told_when_the_session_goes_busy_parked_and_idle(wire):
    session = await wire.create_session()
    events = await drive(wire, session.id, "$ echo hi", decide(wire, session.id, t.DECISION_ONCE))
    watched = await watch_all(wire, session.id)
    assert watched == events, "events of the turn: its RunTurn stream carries them too"
    turn_id = events[0].turn_id
    states = [(e.session_state.state, e.session_state.turn_id) for e in of(events, "session_state")]
    assert states == [
        (State.STATE_RUNNING, turn_id),
        (State.STATE_PARKED, turn_id),
        (State.STATE_RUNNING, turn_id),
        (State.STATE_IDLE, turn_id),
    ]
    kinds = [e.WhichOneof("kind") for e in events]
    assert kinds[:2] == ["accepted", "session_state"]
    assert kinds[kinds.index("approval_request") + 1] == "session_state"
    assert kinds[-2:] == ["session_state", "finished"], "idle, then the turn's last event"
    aside = await wire.run_all(session.id, "hi", aside=True)
    assert not of(aside, "session_state"), "an aside changes no state"


@pytest.mark.parity
async def test_a_closed_sessions_watch_ends_with_a_closed_event(wire):
    session = await wire.create_session()
    await wire.run_all(session.id, "hello")
    last = (await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))).last_seq
    live = wire.stream("Watch", s.WatchRequest(session_id=session.id, after_seq=last, follow=True))

    async def follow() -> list[t.TurnEvent]:
        return [e async for e in live]

    following = asyncio.ensure_future(follow())
    try:
        await asyncio.sleep(0.3)
        await wire.call("CloseSession", s.CloseSessionRequest(session_id=session.id))
        got = await asyncio.wait_for(following, 10)
    finally:
        following.cancel()
        await live.aclose()
    [closed] = got
    assert (closed.session_state.state, closed.session_state.reason) == (
        State.STATE_CLOSED,
        "closed",
    )
    # A watcher that comes after the close: the replay, then a clean end, not a hang.
    after = s.WatchRequest(session_id=session.id, after_seq=closed.seq, follow=True)
    assert await asyncio.wait_for(_drain(wire.stream("Watch", after)), 10) == []
    everything = s.WatchRequest(session_id=session.id, follow=True)
    replay = await asyncio.wait_for(_drain(wire.stream("Watch", everything)), 10)
    assert replay[-1].session_state.state == State.STATE_CLOSED


async def _drain(stream) -> list[t.TurnEvent]:
    return [e async for e in stream]


@pytest.mark.parity
async def test_a_commands_live_output_carries_its_call_id_and_its_sub_agents_name(wire):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "$ echo main\ndelegate tester: $ echo sub",
        decide(wire, session.id, t.DECISION_ONCE),
    )
    calls = {
        e.tool_call.id: e.author
        for e in of(events, "tool_call")
        if e.tool_call.name == "run_command" and not e.tool_call.partial
    }
    output = {(e.tool_output.id, e.author, e.tool_output.output) for e in of(events, "tool_output")}
    assert {(author, text) for _, author, text in output} == {("", "main\n"), ("tester", "sub\n")}
    assert all(calls[call_id] == author for call_id, author, _ in output), "its call's id"
    assert not [e for e in of(events, "text") if e.author == "run_command"]


@pytest.mark.parity
async def test_a_tool_result_says_whether_it_failed_and_how_long_it_ran(wire):
    session = await wire.create_session()
    on_request = decide(wire, session.id, t.DECISION_ONCE)
    ok = of(await drive(wire, session.id, "$ sleep 0.2", on_request), "tool_result")
    failed = of(await drive(wire, session.id, "$ exit 3", on_request), "tool_result")
    missing = of(await drive(wire, session.id, "read nowhere.txt"), "tool_result")
    assert [r.tool_result.is_error for r in ok + failed + missing] == [False, True, True]
    assert ok[0].tool_result.duration.ToTimedelta().total_seconds() >= 0.2
    assert all(r.tool_result.HasField("duration") for r in ok + failed + missing)


@pytest.mark.parity
async def test_the_file_tools_say_which_files_they_changed(wire):
    session = await wire.create_session()
    on_request = decide(wire, session.id, t.DECISION_ONCE)
    prompt = "write a.txt\n```\none\n```\nwrite a.txt\n```\ntwo\n```\ndelete a.txt"
    events = await drive(wire, session.id, prompt, on_request)
    changes = [(e.file_changed.path, e.file_changed.kind) for e in of(events, "file_changed")]
    assert changes == [
        ("a.txt", t.FileChanged.KIND_CREATED),
        ("a.txt", t.FileChanged.KIND_MODIFIED),
        ("a.txt", t.FileChanged.KIND_DELETED),
    ]
    writes = [e.tool_call.id for e in of(events, "tool_call") if not e.tool_call.partial]
    assert [e.file_changed.tool_call_id for e in of(events, "file_changed")] == writes
    denied = await drive(
        wire, session.id, "delete b.txt", decide(wire, session.id, t.DECISION_DENY)
    )
    assert not of(denied, "file_changed"), "nothing changed, nothing said"
