"""Background work the core owns: parked turns hold no task, failures are never silent."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.in_process import OpenCore
from support.wire import Wire

from blitz.core.requests.deadlines import Deadlines
from blitz.core.supervisor import Supervisor
from blitz.store import Store, TurnEnd
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


async def park(client: Wire, session_id: str, text: str) -> t.TurnEvent:
    async for event in client.run(session_id, text):
        if event.HasField("approval_request") or event.HasField("question"):
            return event
    raise AssertionError("the turn never parked")


def tasks_named(prefix: str) -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name().startswith(prefix)]


async def test_parked_turns_hold_no_task_and_share_one_timer(opened: OpenCore):
    async with opened(turn_timeout=600.0, approval_timeout=300.0) as client:
        sessions = [await client.create_session() for _ in range(20)]
        parked = [await park(client, x.id, f"$ echo {i}") for i, x in enumerate(sessions)]
        # No coroutine waits for an answer: none is left once they have parked (the last
        # may still be storing what it parked on).
        async with asyncio.timeout(10):
            while tasks_named("turn-"):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert len(tasks_named("deadlines")) == 1
        # Each still ends at its own time: the first one's answer resumes only that one.
        await client.decide(sessions[0].id, parked[0], t.DECISION_ONCE)
        replay = client.stream("Watch", s.WatchRequest(session_id=sessions[0].id, follow=True))
        async for event in replay:
            if event.HasField("finished"):
                break
        states = [
            (await client.call("GetSession", s.GetSessionRequest(session_id=x.id))).state
            for x in sessions
        ]
    assert states == [s.SESSION_STATE_IDLE] + [s.SESSION_STATE_PARKED] * 19


async def test_deadlines_run_in_order_and_a_cleared_one_never_runs():
    ran: list[str] = []
    supervisor = Supervisor("test")
    deadlines = Deadlines(supervisor)

    async def mark(name: str) -> None:
        ran.append(name)

    start = time.time()
    deadlines.set("late", start + 0.2, lambda: mark("late"))
    deadlines.set("early", start + 0.05, lambda: mark("early"))
    deadlines.set("cleared", start + 0.1, lambda: mark("cleared"))
    deadlines.clear("cleared")
    deadlines.set("moved", start + 0.01, lambda: mark("moved"))
    deadlines.set("moved", start + 0.15, lambda: mark("moved"))
    await asyncio.sleep(0.4)
    await supervisor.aclose()
    assert ran == ["early", "moved", "late"]


async def test_a_failing_task_is_logged_with_its_traceback():
    supervisor = Supervisor("test")

    async def fail() -> None:
        raise RuntimeError("boom")

    with capture_logs() as lines:
        task = supervisor.spawn(fail(), name="doomed")
        with pytest.raises(RuntimeError):
            await task
        await asyncio.sleep(0)
    (line,) = [x for x in lines if x["event"] == "task_failed"]
    assert line["task"] == "doomed" and line["exc_info"][1].args == ("boom",)


@pytest.mark.engines("postgres")  # where processes share the store, leases are renewed
async def test_a_store_that_swallows_a_cancellation_still_lets_the_core_close(
    opened: OpenCore, monkeypatch: pytest.MonkeyPatch, store_class: type[Any]
):
    """A driver may turn the cancellation of a query into an error of its own (psycopg's
    pool can, on PostgreSQL): the leases' sweep, which logs errors and goes on, must still
    end when the core closes, not wait for ever. (Renewals run on a thread of their own.)"""
    entered, armed = asyncio.Event(), asyncio.Event()
    read = store_class.turns_in_state

    async def sweeping(self: Store, state: Any, **kw: Any) -> Any:
        if not armed.is_set() or kw.get("lease_ended_before") is None:
            return await read(self, state, **kw)  # the start's recovery, or not the sweep's
        entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise RuntimeError("query cancelled") from None
        return []

    monkeypatch.setattr(store_class, "turns_in_state", sweeping)
    async with asyncio.timeout(30):
        async with opened() as client:
            armed.set()
            session = await client.create_session()
            await park(client, session.id, "$ echo hi")
            await entered.wait()  # the sweep, every third of a lease


async def test_a_turn_whose_end_fails_to_be_written_is_logged_others_go_on_and_a_restart_ends_it(
    opened: OpenCore, monkeypatch: pytest.MonkeyPatch, store_class: type[Any]
):
    """A turn's end is one write (its `finished`, its session let go, it recorded finished):
    when that write fails, none of it happens, the failure is logged, other sessions go on,
    and the turn, still running in the store, is ended by the next start's recovery."""
    append = store_class.append_events

    async def failing(self: Store, events: Any, **kw: Any) -> Any:
        ends = [w for w in kw.get("writes", ()) if isinstance(w, TurnEnd)]
        if any(end.turn_id == "t-doomed" for end in ends):
            raise RuntimeError("disk gone")
        return await append(self, events, **kw)

    monkeypatch.setattr(store_class, "append_events", failing)
    async with opened() as client:
        doomed, other = await client.create_session(), await client.create_session()
        with capture_logs() as lines:
            request = s.RunTurnRequest(
                session_id=doomed.id, turn_id="t-doomed", turn=t.Turn(text="hello")
            )
            stream = client.stream("RunTurn", request)
            seen = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    async for event in stream:
                        seen.append(event)
            await stream.aclose()
            fine = await client.run_all(other.id, "still here")
        assert not any(e.HasField("finished") for e in seen), "no end was stored"
        assert (await client.call("GetSession", s.GetSessionRequest(session_id=doomed.id))).turn_id
    failures = [x for x in lines if x["event"] in ("event_write_failed", "task_failed")]
    assert failures, "the failure is logged"
    assert "still here" in fine[-1].finished.output
    monkeypatch.undo()
    # Ended at the next start (on a shared store, once the dead holder's lease is over).
    async with opened() as client:
        watch = s.WatchRequest(session_id=doomed.id, follow=True)
        async with asyncio.timeout(60):
            async for event in client.stream("Watch", watch):
                if event.HasField("finished"):
                    break
    assert event.finished.error.reason == "SERVER_RESTARTED"


async def test_a_parked_turns_deadline_ends_it_and_withdraws_its_request(opened: OpenCore):
    async with opened() as client:
        session = await client.create_session()
        events = await client.run_all(session.id, "$ true", timeout=timedelta(seconds=0.3))
    assert events[-3].resolution.via == "withdrawn"
    assert events[-2].session_state.state == events[-2].session_state.STATE_IDLE
    assert events[-1].finished.error.reason == "TURN_TIMEOUT"
