"""A turn through the session service (the parity-marked also over each real client): events,
parking, steering, limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.events import kinds, shape
from support.waiting import wait_until
from support.wire import decide, drive, expect_error, follow_until_finished, until

from blitz.store import PendingRecord, SessionChange, Store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz_client import BlitzError

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


@pytest.mark.parity
async def test_a_plain_turn_streams_text_then_finishes(wire):
    session = await wire.create_session(title="hello")
    events = await drive(wire, session.id, "hello there")
    assert kinds(events)[0] == "accepted"
    assert kinds(events)[-1] == "finished"
    partial = "".join(e.text.text for e in events if e.HasField("text") and e.text.partial)
    final = [e.text for e in events if e.HasField("text") and not e.text.partial]
    assert len(final) == 1 and final[0].repeat
    assert final[0].text == partial
    assert "hello there" in events[-1].finished.output
    assert not events[-1].finished.HasField("error")
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 1
    assert {e.session_id for e in events} == {session.id}
    assert len({e.turn_id for e in events}) == 1


@pytest.mark.parity
async def test_every_event_kind_appears_as_specified(wire, settings):
    session = await wire.create_session()
    prompt = "\n".join(
        [
            "think: weighing options",
            "todo: look; write; ask",
            "$ echo hi-from-shell",
            "write notes/a.txt",
            "```",
            "first line",
            "```",
            "ask: which colour? [red|blue]",
            "all done",
        ]
    )
    answered: list[str] = []

    async def on_request(event: t.TurnEvent) -> None:
        if event.HasField("question"):
            answered.append(event.question.request_id)
            await wire.call(
                "Answer",
                s.AnswerRequest(
                    session_id=session.id, request_id=event.question.request_id, answers=["blue"]
                ),
            )
        else:
            await wire.decide(session.id, event, t.DECISION_ONCE)

    events = await drive(wire, session.id, prompt, on_request)
    seen = set(kinds(events))
    assert {
        "accepted",
        "text",
        "tool_call",
        "tool_result",
        "approval_request",
        "question",
        "tasks",
        "finished",
    } <= seen
    thought = [e for e in events if e.HasField("text") and e.text.thought]
    assert "weighing options" in "".join(e.text.text for e in thought if e.text.partial)
    tasks = next(e.tasks for e in events if e.HasField("tasks"))
    assert [i.content for i in tasks.items] == ["look", "write", "ask"]
    approvals = [e.approval_request for e in events if e.HasField("approval_request")]
    assert [a.kind for a in approvals] == [t.ACTION_KIND_COMMAND, t.ACTION_KIND_WRITE]
    assert approvals[0].detail == "echo hi-from-shell"
    assert approvals[0].scope_label == "command: echo hi-from-shell"
    assert "+first line" in approvals[1].diff
    results = {e.tool_result.id: e.tool_result for e in events if e.HasField("tool_result")}
    calls = {
        e.tool_call.id: e.tool_call
        for e in events
        if e.HasField("tool_call") and not e.tool_call.partial
    }
    assert set(results) <= set(calls)
    shell = next(r for r in results.values() if r.name == "run_command")
    assert "hi-from-shell" in shell.result.fields["output"].string_value
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "notes/a.txt").read_text() == "first line\n"
    assert answered and "answer: blue" in events[-1].finished.output


async def test_denied_command_is_not_run_and_the_reason_reaches_the_model(wire, settings):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "$ touch should-not-exist",
        decide(wire, session.id, t.DECISION_DENY, reason="not on a Friday"),
    )
    workspace = settings.workspace_root / session.workspace
    assert not (workspace / "should-not-exist").exists()
    assert "not on a Friday" in events[-1].finished.output
    assert not events[-1].finished.HasField("error")


@pytest.mark.parity
async def test_approved_once_runs_and_an_edited_command_is_what_runs(wire, settings):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "$ touch requested.txt",
        decide(wire, session.id, t.DECISION_ONCE, command="touch edited.txt"),
    )
    workspace = settings.workspace_root / session.workspace
    assert (workspace / "edited.txt").exists()
    assert not (workspace / "requested.txt").exists()
    final_calls = [
        e.tool_call for e in events if e.HasField("tool_call") and not e.tool_call.partial
    ]
    assert final_calls[-1].args.fields["command"].string_value == "touch edited.txt"


@pytest.fixture
def slow_parking(monkeypatch: pytest.MonkeyPatch, store_class: type[Any]) -> None:
    """Reading a turn's requests back takes 0.3 s, as a parking turn does once they are
    stored and announced (to file their deadlines), so that a client acting the moment
    the requests arrive reaches the server while the turn is still parking."""
    listed = store_class.list_pending

    async def slow_list_pending(self: Store, *args: Any, **kw: Any) -> list[PendingRecord]:
        if kw.get("turn_id") is not None:
            await asyncio.sleep(0.3)
        return await listed(self, *args, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(store_class, "list_pending", slow_list_pending)


@pytest.mark.usefixtures("slow_parking")
async def test_a_request_answered_the_moment_it_arrives_is_found(wire):
    session = await wire.create_session()
    events = await drive(wire, session.id, "$ echo fast", decide(wire, session.id, t.DECISION_ONCE))
    assert [e.tool_result.result["output"] for e in events if e.HasField("tool_result")] == [
        "fast\n"
    ]

    async def answer(event: t.TurnEvent) -> None:
        request = s.AnswerRequest(
            session_id=session.id, request_id=event.question.request_id, answers=["b"]
        )
        await wire.call("Answer", request)

    events = await drive(wire, session.id, "ask: which? [a|b]", answer)
    assert not events[-1].finished.HasField("error")


@pytest.mark.parity
async def test_question_single_and_multi_select_and_invalid_option_rejected(wire):
    session = await wire.create_session()

    async def answer_multi(event: t.TurnEvent) -> None:
        q = event.question
        assert q.multi_select and list(q.options) == ["a", "b", "c"]
        bad = await expect_error(
            wire.call(
                "Answer",
                s.AnswerRequest(session_id=session.id, request_id=q.request_id, answers=["z"]),
            ),
            "invalid_argument",
            "INVALID_ARGUMENT",
        )
        assert bad.metadata["field"] == "answers"
        await wire.call(
            "Answer",
            s.AnswerRequest(session_id=session.id, request_id=q.request_id, answers=["a", "c"]),
        )

    events = await drive(wire, session.id, "ask+: pick some [a|b|c]", answer_multi)
    assert "answer: a, c" in events[-1].finished.output

    async def answer_single(event: t.TurnEvent) -> None:
        q = event.question
        assert not q.multi_select
        with pytest.raises(BlitzError) as two:
            await wire.call(
                "Answer",
                s.AnswerRequest(session_id=session.id, request_id=q.request_id, answers=["x", "y"]),
            )
        assert two.value.metadata["field"] == "answers"
        await wire.call(
            "Answer", s.AnswerRequest(session_id=session.id, request_id=q.request_id, answers=["x"])
        )

    events = await drive(wire, session.id, "ask: one only [x|y]", answer_single)
    assert "answer: x" in events[-1].finished.output


async def test_second_answer_gets_already_resolved(wire):
    session = await wire.create_session()

    async def twice(event: t.TurnEvent) -> None:
        req = s.DecideRequest(
            session_id=session.id,
            request_id=event.approval_request.request_id,
            decision=t.DECISION_ONCE,
        )
        await wire.call("Decide", req)
        late = await expect_error(
            wire.call("Decide", req), "failed_precondition", "ALREADY_RESOLVED"
        )
        assert late.metadata["request_id"] == req.request_id

    await drive(wire, session.id, "$ true", twice)


@pytest.mark.parametrize("when", ["parked", "while parking"])
async def test_cancel_while_parked_ends_with_cancelled_and_withdraws_the_request(
    wire, when, request
):
    if when == "while parking":
        # The Cancel lands while the turn parks: what it sent out must be stored to be
        # withdrawn (parking once announced its requests before storing them).
        request.getfixturevalue("slow_parking")
    session = await wire.create_session()
    request_ids = []

    async def cancel(event: t.TurnEvent) -> None:
        request_ids.append(event.approval_request.request_id)
        await wire.call("Cancel", s.CancelRequest(session_id=session.id))

    events = await drive(wire, session.id, "$ echo never", cancel)
    assert events[-1].finished.error.reason == "CANCELLED"
    [withdrawn] = [e.resolution for e in events if e.HasField("resolution")]
    assert (withdrawn.request_id, withdrawn.via) == (request_ids[0], "withdrawn")
    with pytest.raises(BlitzError) as late:
        await wire.decide(session.id, request_ids[0], t.DECISION_ONCE)
    assert late.value.reason == "ALREADY_RESOLVED"
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_IDLE and not got.pending


async def test_a_cancel_racing_a_decision_leaves_nothing_after_finished(
    wire, monkeypatch, store_class
):
    # The decision is stored slowly, so that the Cancel arrives while it is being handled.
    store_resolution = store_class.resolve_pending

    async def slow_resolve(self: Store, *args: Any) -> bool:
        await asyncio.sleep(0.3)
        return await store_resolution(self, *args)

    monkeypatch.setattr(store_class, "resolve_pending", slow_resolve)
    session = await wire.create_session()
    stream = wire.run(session.id, "$ sleep 1; echo ran")
    event = await until(stream, "approval_request")
    deciding = asyncio.create_task(wire.decide(session.id, event, t.DECISION_ONCE))
    await asyncio.sleep(0.1)
    await wire.call("Cancel", s.CancelRequest(session_id=session.id))
    await deciding
    await asyncio.sleep(1.5)  # what a resumed turn would have done by now
    watch = s.WatchRequest(session_id=session.id)
    events = [e async for e in wire.stream("Watch", watch) if e.turn_id == event.turn_id]
    assert events[-1].finished.error.reason == "CANCELLED"
    assert kinds(events).count("finished") == 1
    await stream.aclose()


@pytest.mark.parity
async def test_cancel_while_streaming(wire):
    session = await wire.create_session()
    events = []
    async for event in wire.run(session.id, "stream: 5000000"):
        events.append(event)
        if len(events) == 3:
            await wire.call("Cancel", s.CancelRequest(session_id=session.id))
    assert events[-1].finished.error.reason == "CANCELLED"
    assert events[-1].finished.error.message


async def test_cancel_while_a_command_runs(wire, settings):
    session = await wire.create_session()
    started = settings.workspace_root / session.workspace / "started"

    async def approve_then_cancel(event: t.TurnEvent) -> None:
        await wire.decide(session.id, event, t.DECISION_ONCE)
        assert await wait_until(started.exists, within=10)  # the command marks that it runs
        await wire.call("Cancel", s.CancelRequest(session_id=session.id))

    began = asyncio.get_running_loop().time()
    events = await drive(wire, session.id, "$ touch started && sleep 30", approve_then_cancel)
    assert events[-1].finished.error.reason == "CANCELLED"
    assert asyncio.get_running_loop().time() - began < 20


@pytest.mark.parity
async def test_steer_is_seen_by_the_next_model_call(wire):
    session = await wire.create_session()

    async def steer_then_approve(event: t.TurnEvent) -> None:
        resp = await wire.call(
            "Steer", s.SteerRequest(session_id=session.id, text="also mention llamas")
        )
        assert resp.turn_id == event.turn_id
        await wire.decide(session.id, event, t.DECISION_ONCE)

    events = await drive(wire, session.id, "$ true", steer_then_approve)
    assert "llamas" in events[-1].finished.output
    assert list(events[-1].finished.leftover) == []


async def test_steer_not_consumed_comes_back_as_leftover(wire):
    session = await wire.create_session()

    async def steer_then_cancel(event: t.TurnEvent) -> None:
        await wire.call("Steer", s.SteerRequest(session_id=session.id, text="too late"))
        await wire.call("Cancel", s.CancelRequest(session_id=session.id))

    events = await drive(wire, session.id, "ask: anything?", steer_then_cancel)
    assert list(events[-1].finished.leftover) == ["too late"]


async def test_every_steer_that_succeeds_is_seen_or_comes_back(wire, monkeypatch, store_class):
    # The turn's end is made slow (marking the session idle takes 0.3 s), and Steers keep
    # coming until one is refused: none may be accepted and then lost.
    mark = store_class.update_session

    async def slow_mark(self: Store, session_id: str, change: SessionChange) -> bool:
        if change.state == s.SESSION_STATE_IDLE:
            await asyncio.sleep(0.3)
        return await mark(self, session_id, change)

    monkeypatch.setattr(store_class, "update_session", slow_mark)
    session = await wire.create_session()
    started = asyncio.Event()
    accepted: list[str] = []

    async def steer_until_refused() -> None:
        await started.wait()
        while True:
            text = f"note {len(accepted)}"
            try:
                await wire.call("Steer", s.SteerRequest(session_id=session.id, text=text))
            except BlitzError as refused:
                assert refused.reason == "NO_RUNNING_TURN"
                return
            accepted.append(text)
            await asyncio.sleep(0.01)

    steering = asyncio.create_task(steer_until_refused())
    events = []
    async for event in wire.run(session.id, "stream: 200"):
        events.append(event)
        started.set()
    await asyncio.wait_for(steering, 10)
    seen = "".join(e.text.text for e in events if e.HasField("text"))
    leftover = set(events[-1].finished.leftover)
    assert accepted
    assert [t for t in accepted if t not in leftover and t not in seen] == []


async def test_steer_without_a_running_turn_is_refused(wire):
    session = await wire.create_session()
    await expect_error(
        wire.call("Steer", s.SteerRequest(session_id=session.id, text="hi")),
        "failed_precondition",
        "NO_RUNNING_TURN",
    )


@pytest.mark.parity
async def test_second_turn_while_one_runs_is_session_busy(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "$ true")
    first = (await until(stream, "approval_request")).turn_id
    busy = await expect_error(
        wire.run_all(session.id, "another"), "failed_precondition", "SESSION_BUSY"
    )
    assert busy.metadata["turn_id"] == first
    await stream.aclose()
    await wire.call("Cancel", s.CancelRequest(session_id=session.id))


async def test_same_turn_id_streams_the_same_turn_again(wire):
    session = await wire.create_session()
    first = await wire.run_all(session.id, "say it once", turn_id="client-key-1")
    again = await wire.run_all(session.id, "say it once", turn_id="client-key-1")
    assert shape(again) == shape(first)
    assert again[-1].seq == first[-1].seq
    assert {e.turn_id for e in again} == {"client-key-1"}
    usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    assert usage.total.calls == 1


async def test_turn_id_reused_for_a_different_turn_is_refused(wire):
    session = await wire.create_session()
    await wire.run_all(session.id, "first", turn_id="k")
    with pytest.raises(BlitzError) as err:
        await wire.run_all(session.id, "second", turn_id="k")
    assert err.value.reason == "TURN_ID_REUSED"


@pytest.mark.parity
async def test_disconnecting_does_not_stop_the_turn(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "stream: 3000")
    async for _ in stream:
        break
    await stream.aclose()
    events = await follow_until_finished(wire, session.id)
    assert events[-1].finished.output
    assert not events[-1].finished.HasField("error")


@pytest.mark.parity
async def test_watch_replay_after_a_dropped_stream_equals_the_live_sequence(wire):
    """Resume from the last seq seen: together the pieces hold every event once."""
    session = await wire.create_session()
    live: list[t.TurnEvent] = []
    stream = wire.run(session.id, "think: a little\nstream: 4000\n$ true")
    async for event in stream:
        live.append(event)
        if len(live) == 5:
            break
    await stream.aclose()
    approve = decide(wire, session.id, t.DECISION_ONCE)
    live += await follow_until_finished(wire, session.id, live[-1].seq, approve)
    replay = [
        e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id, after_seq=0))
    ]
    seqs = [e.seq for e in live]
    assert seqs == sorted(set(seqs)), "live: no duplicates, in order"
    assert [e.seq for e in replay] == sorted({e.seq for e in replay})
    assert replay[-1].seq == live[-1].seq
    assert shape(live) == shape(replay)
    assert "chunk 3999" in shape(live)[0]


async def test_watch_without_follow_ends_after_replay(wire):
    session = await wire.create_session()
    turn = await wire.run_all(session.id, "hello")
    replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    assert replay[-1].seq == turn[-1].seq
    later = [
        e
        async for e in wire.stream(
            "Watch", s.WatchRequest(session_id=session.id, after_seq=turn[-1].seq)
        )
    ]
    assert later == []


@pytest.mark.parity
async def test_usage_ledger_and_before_after(wire):
    session = await wire.create_session()
    first = await wire.run_all(session.id, "one")
    second = await drive(wire, session.id, "$ true", decide(wire, session.id, t.DECISION_ONCE))
    usage = await wire.call("GetUsage", s.GetUsageRequest(session_id=session.id))
    # One call answers "one"; the command turn makes two (ask to run, then answer).
    assert [e.turn_id for e in usage.entries] == [first[-1].turn_id] + [second[-1].turn_id] * 2
    assert usage.total.calls == 3
    assert first[-1].finished.before.calls == 0
    assert first[-1].finished.after.calls == 1
    assert first[-1].finished.after.input > 0 and first[-1].finished.after.output > 0
    assert second[-1].finished.before == first[-1].finished.after
    assert second[-1].finished.after == usage.total
    assert usage.total.input == sum(e.input for e in usage.entries)
    assert all(e.model == "demo" and e.priced for e in usage.entries)
    assert usage.total.priced


@pytest.mark.parity
async def test_a_deny_with_interrupt_stops_the_turn_in_one_call(wire, settings):
    session = await wire.create_session()
    events = await drive(
        wire,
        session.id,
        "$ touch first.txt\n$ touch second.txt",
        decide(wire, session.id, t.DECISION_DENY, reason="not now", interrupt=True),
    )
    [resolution] = [e.resolution for e in events if e.HasField("resolution")]
    assert (resolution.decision, resolution.interrupt) == (t.DECISION_DENY, True)
    assert resolution.reason == "not now"
    assert events[-1].finished.error.reason == "CANCELLED"
    assert len([e for e in events if e.HasField("approval_request")]) == 1, "no second ask"
    workspace = settings.workspace_root / session.workspace
    assert not (workspace / "first.txt").exists() and not (workspace / "second.txt").exists()
    got = await wire.call("GetSession", s.GetSessionRequest(session_id=session.id))
    assert got.state == s.SESSION_STATE_IDLE
    again = await wire.run_all(session.id, "hello")
    assert not again[-1].finished.HasField("error"), "the session goes on"


@pytest.mark.parity
async def test_interrupt_goes_with_a_deny_only(wire):
    session = await wire.create_session()
    stream = wire.run(session.id, "$ echo x")
    asked = await until(stream, "approval_request")
    await stream.aclose()
    decision = s.DecideRequest(
        session_id=session.id,
        request_id=asked.approval_request.request_id,
        decision=t.DECISION_ONCE,
        interrupt=True,
    )
    error = await expect_error(
        wire.call("Decide", decision), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["field"] == "interrupt"
