"""A session that already has a turn: reject, enqueue, interrupt; steer aimed at its turn;
and a server with every slot taken, which says so."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from support.servers import make_settings, parked_turn, serving
from support.wire import Wire, expect_error, follow_until_finished, until

from blitz.store import TurnRecord, TurnState, open_store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

pytestmark = pytest.mark.engines("sqlite", "postgres")


def run(wire: Wire, session_id: str, text: str, busy: int, turn_id: str = ""):
    request = s.RunTurnRequest(
        session_id=session_id,
        turn=t.Turn(text=text),
        turn_id=turn_id,
        busy=busy,  # type: ignore[arg-type]
    )
    return wire.stream("RunTurn", request)


async def parked(wire: Wire, text: str = "$ echo first") -> tuple[s.Session, t.TurnEvent]:
    """A session whose turn is parked on an approval request, and that request."""
    session = await wire.create_session()
    stream = wire.run(session.id, text)
    asked = await until(stream, "approval_request")
    await stream.aclose()
    return session, asked


async def get(wire: Wire, session_id: str) -> s.Session:
    return await wire.call("GetSession", s.GetSessionRequest(session_id=session_id))


@pytest.mark.parity
async def test_reject_is_the_default_and_says_which_turn_is_in_the_way(wire):
    session, asked = await parked(wire)
    for busy in (s.BUSY_STRATEGY_UNSPECIFIED, s.BUSY_STRATEGY_REJECT):
        error = await expect_error(
            run(wire, session.id, "hello", busy).__anext__(),
            "failed_precondition",
            "SESSION_BUSY",
        )
        assert error.metadata["turn_id"] == asked.turn_id


@pytest.mark.parity
async def test_an_enqueued_turn_is_accepted_queued_visible_and_runs_after_the_turn(wire):
    session, asked = await parked(wire)
    queued = run(wire, session.id, "after you", s.BUSY_STRATEGY_ENQUEUE, turn_id="t_second")
    first = await queued.__anext__()
    assert first.HasField("accepted") and first.accepted.turn.text == "after you"
    notice = await until(queued, "notice")
    assert "Queued" in notice.notice.text and asked.turn_id in notice.notice.text
    view = await get(wire, session.id)
    assert list(view.queued_turn_ids) == ["t_second"]
    assert view.turn_id == asked.turn_id
    listed = await wire.call("GetTurn", s.GetTurnRequest(session_id=session.id, turn_id="t_second"))
    assert listed.state == s.TURN_STATE_QUEUED

    await wire.decide(session.id, asked, t.DECISION_ONCE)
    rest = [e async for e in queued]
    assert rest[-1].HasField("finished") and not rest[-1].finished.HasField("error")
    assert "after you" in rest[-1].finished.output
    states = [e.session_state.state for e in rest if e.HasField("session_state")]
    assert states[0] == t.SessionStateChange.STATE_RUNNING
    # The queued turn started after the first had finished: its `before` is the first's after.
    replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    ends = [e for e in replay if e.HasField("finished")]
    assert [e.turn_id for e in ends] == [asked.turn_id, "t_second"]
    assert ends[1].finished.before == ends[0].finished.after
    assert list((await get(wire, session.id)).queued_turn_ids) == []


async def test_queued_turns_start_in_order_and_one_can_be_cancelled(wire):
    session, asked = await parked(wire)
    streams = {}
    for name in ("t_a", "t_b", "t_c"):
        streams[name] = run(wire, session.id, f"turn {name}", s.BUSY_STRATEGY_ENQUEUE, name)
        await until(streams[name], "notice")
    assert list((await get(wire, session.id)).queued_turn_ids) == ["t_a", "t_b", "t_c"]
    cancelled = await wire.call("Cancel", s.CancelRequest(session_id=session.id, turn_id="t_b"))
    assert cancelled.turn_id == "t_b"
    b_rest = [e async for e in streams["t_b"]]
    assert b_rest[-1].finished.error.reason == "CANCELLED"
    assert [e.WhichOneof("kind") for e in b_rest] == ["finished"], "it never ran"
    assert list((await get(wire, session.id)).queued_turn_ids) == ["t_a", "t_c"]

    await wire.decide(session.id, asked, t.DECISION_ONCE)
    for name in ("t_a", "t_c"):
        events = [e async for e in streams[name]]
        assert not events[-1].finished.HasField("error"), events[-1]
    replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    running = t.SessionStateChange.STATE_RUNNING
    started = [
        e.turn_id
        for e in replay
        if e.HasField("session_state") and e.session_state.state == running
    ]
    assert list(dict.fromkeys(started)) == [asked.turn_id, "t_a", "t_c"]


@pytest.mark.parity
async def test_interrupt_cancels_the_turn_and_starts_before_any_queued(wire):
    session, asked = await parked(wire)
    waiting = run(wire, session.id, "queued first", s.BUSY_STRATEGY_ENQUEUE, "t_waiting")
    await until(waiting, "notice")
    now = run(wire, session.id, "do this now", s.BUSY_STRATEGY_INTERRUPT, "t_now")
    events = [e async for e in now]
    assert events[0].HasField("accepted")
    assert not events[-1].finished.HasField("error") and "do this now" in events[-1].finished.output
    replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    ends = [(e.turn_id, e.finished.error.reason) for e in replay if e.HasField("finished")]
    assert ends[0] == (asked.turn_id, "CANCELLED")
    interrupted = next(e for e in replay if e.turn_id == asked.turn_id and e.HasField("finished"))
    assert "t_now" in interrupted.finished.error.message
    assert [turn for turn, _ in ends[:2]] == [asked.turn_id, "t_now"], "before the queued one"
    await waiting.aclose()


async def test_a_queued_turn_survives_a_restart_and_runs_once_the_turn_ends(settings):
    session, asked = await parked_turn(settings, "$ echo first")
    async with serving(settings) as wire:
        queued = run(wire, session.id, "kept across", s.BUSY_STRATEGY_ENQUEUE, "t_kept")
        await until(queued, "notice")
        await queued.aclose()
    async with serving(replace(settings), "grpc") as wire:
        assert list((await get(wire, session.id)).queued_turn_ids) == ["t_kept"]
        await wire.decide(session.id, asked, t.DECISION_ONCE)
        events = await follow_until_finished(wire, session.id, after_seq=asked.seq)
        assert events[-1].turn_id == asked.turn_id
        rest = await follow_until_finished(wire, session.id, after_seq=events[-1].seq)
    assert rest[-1].turn_id == "t_kept" and "kept across" in rest[-1].finished.output


async def test_a_queue_left_behind_an_ended_turn_starts_at_the_next_start(settings):
    """The process died between a turn's end and the next one's start."""
    async with serving(settings) as wire:
        session = await wire.create_session()
        await wire.run_all(session.id, "hello")
    async with open_store(settings.database) as store:
        rec = TurnRecord(
            session.id,
            "t_left",
            TurnState.QUEUED,
            t.Turn(text="left behind").SerializeToString(),
            2.0,
            queued=2.0,
        )
        await store.create_turn(rec, lease_until=0.0)
    async with serving(settings) as wire:
        events = await follow_until_finished(wire, session.id, after_seq=0)
        while events[-1].turn_id != "t_left":
            events = await follow_until_finished(wire, session.id, after_seq=events[-1].seq)
    assert "left behind" in events[-1].finished.output


async def test_closing_a_session_ends_its_queue(wire):
    session, _ = await parked(wire)
    queued = run(wire, session.id, "never", s.BUSY_STRATEGY_ENQUEUE, "t_never")
    await until(queued, "notice")
    await wire.call("CloseSession", s.CloseSessionRequest(session_id=session.id))
    rest = [e async for e in queued]
    assert rest[-1].finished.error.reason == "CANCELLED"
    assert list((await get(wire, session.id)).queued_turn_ids) == []


@pytest.mark.parity
async def test_steer_with_an_expected_turn_lands_only_in_that_turn(wire):
    session, asked = await parked(wire)
    error = await expect_error(
        wire.call(
            "Steer",
            s.SteerRequest(session_id=session.id, text="hi", expected_turn_id="t_gone"),
        ),
        "failed_precondition",
        "TURN_MISMATCH",
    )
    assert error.metadata == {"expected_turn_id": "t_gone", "turn_id": asked.turn_id}
    steered = await wire.call(
        "Steer",
        s.SteerRequest(session_id=session.id, text="hi", expected_turn_id=asked.turn_id),
    )
    assert steered.turn_id == asked.turn_id


@pytest.mark.parity
async def test_an_unknown_strategy_is_refused_by_name(wire):
    session = await wire.create_session()
    error = await expect_error(
        run(wire, session.id, "hello", 42).__anext__(), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "busy"


async def _command_holding_the_only_slot(wire: Wire) -> None:
    """A turn whose approved command runs for a while: it holds the one slot."""
    session = await wire.create_session()
    stream = wire.run(session.id, "$ echo started; sleep 4")
    await wire.decide_next(stream, session.id, t.DECISION_ONCE)
    await until(stream, "tool_output")
    asyncio.get_running_loop().create_task(_drain(stream))


async def _drain(stream) -> None:
    async for _ in stream:
        pass


async def test_past_the_running_limit_a_new_turn_waits_with_a_notice(tmp_path):
    async with serving(make_settings(tmp_path / "data", max_running_turns=1)) as wire:
        await _command_holding_the_only_slot(wire)
        other = await wire.create_session()
        events = await wire.run_all(other.id, "hello")
    notices = [e.notice.text for e in events if e.HasField("notice")]
    assert any("Waiting for a free slot" in text for text in notices), notices
    assert not events[-1].finished.HasField("error")


async def test_past_the_running_limit_a_new_turn_is_rate_limited_when_so_set(tmp_path):
    settings = make_settings(tmp_path / "data", max_running_turns=1, when_full="refuse")
    async with serving(settings, "connect") as wire:
        await _command_holding_the_only_slot(wire)
        other = await wire.create_session()
        error = await expect_error(
            wire.run(other.id, "hello").__anext__(), "resource_exhausted", "RATE_LIMITED"
        )
        assert error.metadata["limit"] == "1"
        assert error.metadata["retry_after"].endswith("s")
        assert float(error.metadata["retry_after"][:-1]) >= 0.5
