"""Sessions, errors (over both wires for the parity-marked), limits, and what survives a restart."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from support.events import kinds
from support.servers import make_settings, parked_turn, serving
from support.waiting import wait_until
from support.wire import decide, drive, expect_error, follow_until_finished, until

from blitz.core.requests.approvals import Outcome
from blitz.store import SessionChange, Store, TurnRecord, TurnState, open_store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


@pytest.mark.parity
async def test_unknown_session_is_not_found_with_error_info(wire):
    error = await expect_error(
        wire.call("GetSession", s.GetSessionRequest(session_id="s_nope")),
        "not_found",
        "SESSION_NOT_FOUND",
    )
    assert error.metadata["session_id"] == "s_nope"


@pytest.mark.parity
async def test_bad_input_names_the_field(wire):
    error = await expect_error(
        wire.call("GetSession", s.GetSessionRequest()), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "session_id"
    error = await expect_error(
        wire.create_session(model="no-such-provider:x"), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "model"
    error = await expect_error(
        wire.create_session(labels={'team"': "x"}), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "labels"
    error = await expect_error(
        wire.call("ListSessions", s.ListSessionsRequest(labels={'a"]': "x"})),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "labels"
    error = await expect_error(
        wire.call("ListSessions", s.ListSessionsRequest(state=99)),  # type: ignore[arg-type]
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "state"
    idle = await wire.create_session()
    error = await expect_error(
        anext(wire.stream("Watch", s.WatchRequest(session_id=idle.id, after_seq=5))),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert (error.metadata["field"], error.metadata["last_seq"]) == ("after_seq", "0")
    for workspace in ("../escape", "w" * 300):
        error = await expect_error(
            wire.create_session(workspace=workspace), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == "workspace"
    session = await wire.create_session()
    error = await expect_error(wire.run_all(session.id, ""), "invalid_argument", "INVALID_ARGUMENT")
    assert error.metadata["field"] == "turn.text"
    error = await expect_error(
        wire.run_all(session.id, "x", max_turns=-1), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "turn.max_turns"
    error = await expect_error(
        wire.call("Decide", s.DecideRequest(session_id=session.id, request_id="r")),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "decision"
    await expect_error(
        wire.call(
            "Decide",
            s.DecideRequest(session_id=session.id, request_id="r", decision=t.DECISION_ONCE),
        ),
        "not_found",
        "REQUEST_NOT_FOUND",
    )
    # The server goes on serving the session after every refusal.
    events = await wire.run_all(session.id, "still here")
    assert "still here" in events[-1].finished.output


@pytest.mark.parity
async def test_sessions_are_listed_paged_and_closed(wire):
    made = [
        await wire.create_session(title=f"n{i}", labels={"team": "x" if i % 2 else "y"})
        for i in range(3)
    ]
    page = await wire.call("ListSessions", s.ListSessionsRequest(page_size=2))
    assert [x.id for x in page.sessions] == [made[2].id, made[1].id]
    rest = await wire.call(
        "ListSessions", s.ListSessionsRequest(page_size=2, page_token=page.next_page_token)
    )
    assert [x.id for x in rest.sessions] == [made[0].id] and not rest.next_page_token
    labelled = await wire.call("ListSessions", s.ListSessionsRequest(labels={"team": "x"}))
    assert [x.id for x in labelled.sessions] == [made[1].id]
    closed = await wire.call("CloseSession", s.CloseSessionRequest(session_id=made[0].id))
    assert closed.state == s.SESSION_STATE_CLOSED
    await expect_error(wire.run_all(made[0].id, "hello"), "failed_precondition", "SESSION_CLOSED")


async def test_closing_a_session_cancels_its_parked_turn(wire):
    session = await wire.create_session()

    async def close(event: t.TurnEvent) -> None:
        await wire.call("CloseSession", s.CloseSessionRequest(session_id=session.id))

    events = await drive(wire, session.id, "$ true", close)
    assert events[-1].finished.error.reason == "CANCELLED"
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_CLOSED


async def test_max_turns_ends_the_turn_with_error_info(wire):
    session = await wire.create_session()
    events = await drive(
        wire, session.id, "$ true", decide(wire, session.id, t.DECISION_ONCE), max_turns=1
    )
    error = events[-1].finished.error
    assert error.reason == "MAX_TURNS"
    assert error.metadata["max_turns"] == "1"
    assert events[-1].finished.after.calls == 1


async def test_a_parked_turn_times_out(wire):
    session = await wire.create_session()
    turn = dict(timeout={"seconds": 1})
    events = await drive(wire, session.id, "ask: will anyone answer?", None, **turn)
    assert events[-1].finished.error.reason == "TURN_TIMEOUT"
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_IDLE and not got.pending


async def test_a_running_turn_times_out(wire):
    session = await wire.create_session()
    began = asyncio.get_running_loop().time()
    events = await drive(
        wire,
        session.id,
        "$ sleep 30",
        decide(wire, session.id, t.DECISION_ONCE),
        timeout={"seconds": 1},
    )
    assert events[-1].finished.error.reason == "TURN_TIMEOUT"
    assert asyncio.get_running_loop().time() - began < 15


async def test_an_approval_that_times_out_is_a_deny_announced_by_a_notice(tmp_path):
    settings = make_settings(tmp_path / "data", approval_timeout=0.5)
    async with serving(settings) as wire:
        session = await wire.create_session()
        events = await drive(wire, session.id, "$ touch nope")
        notices = [e.notice for e in events if e.HasField("notice")]
        assert notices and "timed out" in notices[0].text
        assert not (settings.workspace_root / session.workspace / "nope").exists()
        assert not events[-1].finished.HasField("error")
        assert "timed out" in events[-1].finished.output


async def test_a_parked_turn_survives_a_restart_and_finishes_after_it(settings):
    session, parked = await parked_turn(settings, "$ echo survived > proof.txt")

    # A new process on the same database: ports are new, the turn is still waiting.
    async with serving(replace(settings), "connect") as wire:
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
        assert got.state == s.SESSION_STATE_PARKED
        assert [e.approval_request.request_id for e in got.pending] == [
            parked.approval_request.request_id
        ]
        await wire.decide(session.id, parked, t.DECISION_ONCE)
        rest = await follow_until_finished(wire, session.id, after_seq=parked.seq)
    assert rest[0].seq == parked.seq + 1
    assert not rest[-1].finished.HasField("error")
    assert (settings.workspace_root / session.workspace / "proof.txt").read_text() == "survived\n"


async def test_events_and_usage_survive_a_restart(settings):
    async with serving(settings) as wire:
        session = await wire.create_session(title="kept")
        first = await wire.run_all(session.id, "remember me")
    async with serving(settings) as wire:
        replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
        usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
        second = await wire.run_all(session.id, "and again")
    assert replay[-1] == first[-1]
    assert usage.total == first[-1].finished.after
    assert second[0].seq == first[-1].seq + 1
    assert second[-1].finished.before == first[-1].finished.after


async def test_a_turn_running_at_shutdown_finishes_with_server_restarted(tmp_path):
    settings = make_settings(tmp_path / "data", drain_timeout=0.2)
    async with serving(settings) as wire:
        session = await wire.create_session()
        stream = wire.run(session.id, "$ sleep 30")
        await wire.decide_next(stream, session.id, t.DECISION_ONCE)
        await stream.aclose()
    async with serving(settings) as wire:
        replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert replay[-1].finished.error.reason == "SERVER_RESTARTED"
    assert got.state == s.SESSION_STATE_IDLE


# What a process killed at a bad moment leaves behind, and what the next one makes of it.
# Each test writes that state with the store itself, between two servers on one database.


async def _replay(settings, session_id: str) -> tuple[list[t.TurnEvent], s.Session]:
    async with serving(settings) as wire:
        events: list[t.TurnEvent] = []
        # Up to the end of the last turn: recovery may have resumed one.
        watch = s.WatchRequest(session_id=session_id, follow=True)
        async with asyncio.timeout(20):
            async for event in wire.stream("Watch", watch):
                events.append(event)
                if event.HasField("finished") and kinds(events).count("accepted") == kinds(
                    events
                ).count("finished"):
                    break
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=session_id))
        again = await wire.run_all(session_id, "still usable")
    assert not again[-1].finished.HasField("error")
    return events, got


async def _run_by_the_dead(store: Store, session_id: str, turn_id: str, old: TurnState) -> bool:
    """Mark the turn running, held by a process that died (its lease long over)."""
    rec = await store.claim_turn(session_id, turn_id, state=old, owner="dead", lease_until=0.0)
    return rec is not None


async def test_a_turn_the_process_died_starting_gets_accepted_then_finished(settings):
    async with serving(settings) as wire:
        session = await wire.create_session()
    async with open_store(settings.database) as store:
        # Killed after recording the turn, before its `accepted` reached the log.
        await store.create_turn(
            TurnRecord(
                session.id,
                "t_dying",
                TurnState.RUNNING,
                t.Turn(text="hi").SerializeToString(),
                1.0,
                owner="dead",
                epoch=1,
            ),
            lease_until=0.0,
        )
        await store.update_session(
            session.id,
            SessionChange(update_time=1.0, state=s.SESSION_STATE_RUNNING, turn_id="t_dying"),
        )
    events, got = await _replay(settings, session.id)
    # Beside the session going idle (session_state), which it says before its end.
    dying = [e for e in events if e.turn_id == "t_dying" and not e.HasField("session_state")]
    assert [e.WhichOneof("kind") for e in dying] == ["accepted", "finished"]
    assert dying[-1].finished.error.reason == "SERVER_RESTARTED"
    assert got.state == s.SESSION_STATE_IDLE


async def test_a_turn_the_process_died_finishing_is_not_finished_twice(settings):
    async with serving(settings) as wire:
        session = await wire.create_session()
        first = await wire.run_all(session.id, "hello")
    turn_id = first[-1].turn_id
    async with open_store(settings.database) as store:
        # Killed after `finished` reached the log, before the records followed it.
        assert await _run_by_the_dead(store, session.id, turn_id, TurnState.FINISHED)
        await store.update_session(
            session.id,
            SessionChange(update_time=1.0, state=s.SESSION_STATE_RUNNING, turn_id=turn_id),
        )
    events, got = await _replay(settings, session.id)
    finished = [e.finished for e in events if e.turn_id == turn_id and e.HasField("finished")]
    assert len(finished) == 1 and not finished[0].HasField("error")
    assert got.state == s.SESSION_STATE_IDLE


async def test_an_answer_the_process_stored_but_did_not_act_on_resumes_the_turn(settings):
    session, event = await parked_turn(settings, "$ echo answered")
    request_id = event.approval_request.request_id
    async with open_store(settings.database) as store:
        # Killed after storing the decision, before announcing it and resuming the turn.
        outcome = Outcome.approval(request_id, t.DECISION_ONCE)
        assert await store.resolve_pending(session.id, request_id, outcome.to_json())
    events, got = await _replay(settings, session.id)
    resolutions = [e.resolution for e in events if e.HasField("resolution")]
    assert [(r.request_id, r.decision) for r in resolutions] == [(request_id, t.DECISION_ONCE)]
    [result] = [e.tool_result.result for e in events if e.HasField("tool_result")]
    assert result["output"] == "answered\n"
    assert not got.pending


async def test_a_request_the_process_died_announcing_is_withdrawn(settings):
    session, event = await parked_turn(settings, "$ echo never")
    request_id = event.approval_request.request_id
    turn_id = event.turn_id
    async with open_store(settings.database) as store:
        # Killed after storing and announcing the request, before the turn was marked parked.
        assert await _run_by_the_dead(store, session.id, turn_id, TurnState.PARKED)
    events, got = await _replay(settings, session.id)
    mine = [e for e in events if e.turn_id == turn_id and not e.HasField("session_state")]
    assert [(e.resolution.request_id, e.resolution.via) for e in mine[-2:-1]] == [
        (request_id, "withdrawn")
    ]
    assert mine[-1].finished.error.reason == "SERVER_RESTARTED"
    assert not got.pending


async def test_a_parked_turn_the_process_died_ending_is_ended(settings):
    session, event = await parked_turn(settings, "$ echo never")
    async with open_store(settings.database) as store:
        # Killed ending the parked turn (a Cancel, a deadline): the session was let go,
        # the `finished` event not yet written.
        await store.update_session(
            session.id, SessionChange(update_time=1.0, state=s.SESSION_STATE_IDLE, turn_id="")
        )
    events, got = await _replay(settings, session.id)
    mine = [e for e in events if e.turn_id == event.turn_id and not e.HasField("session_state")]
    assert mine[-2].resolution.via == "withdrawn"
    assert mine[-1].finished.error.reason == "SERVER_RESTARTED"
    assert not got.pending


async def test_a_parked_turn_of_a_session_the_process_died_closing_is_cancelled(settings):
    session, event = await parked_turn(settings, "$ echo never")
    async with open_store(settings.database) as store:
        # Killed after marking the session closed, before cancelling its turn.
        await store.update_session(
            session.id,
            SessionChange(update_time=1.0, state=s.SESSION_STATE_CLOSED, turn_id=event.turn_id),
        )
    async with serving(settings) as wire:
        watch = s.WatchRequest(session_id=session.id)
        events = [e async for e in wire.stream("Watch", watch)]
        got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert events[-1].finished.error.reason == "CANCELLED"
    assert events[-2].resolution.via == "withdrawn"
    assert got.state == s.SESSION_STATE_CLOSED and not got.pending


async def test_a_slow_session_does_not_hold_up_another(wire):
    slow = await wire.create_session()
    fast = await wire.create_session()
    stream = wire.run(slow.id, "$ true")
    await until(stream, "approval_request")
    events = await wire.run_all(fast.id, "quick one")
    assert not events[-1].finished.HasField("error")
    await stream.aclose()
    await wire.call("Cancel", s.CancelRequest(session_id=slow.id))


async def test_a_turns_log_lines_carry_its_session_and_turn(wire):
    from structlog.contextvars import merge_contextvars
    from structlog.testing import capture_logs

    session = await wire.create_session()
    with capture_logs(processors=[merge_contextvars]) as lines:
        events = await drive(wire, session.id, "$ true", decide(wire, session.id, t.DECISION_ONCE))
        turn_id = events[-1].turn_id
        # A client may see `finished` a moment before the server logs that it sent it.
        await wait_until(
            lambda: any(
                x["event"] == "turn_finished" for x in lines if x.get("turn_id") == turn_id
            ),
            within=5,
        )
    ours = [line for line in lines if line.get("turn_id") == turn_id]
    assert {"turn_started", "turn_parked", "turn_resumed", "turn_finished"} <= {
        line["event"] for line in ours
    }
    assert all(line["session_id"] == session.id for line in ours)
