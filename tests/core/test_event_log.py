"""The event log on a real SQLite file: one pipeline for every event, numbered by the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from blitz.config import Settings
from blitz.core.events.event_log import _BACKLOG_HIGH, EventLog, TurnLost
from blitz.errors import BlitzError
from blitz.size_limits import EVENT_MAX
from blitz.store import (
    Checkpoint,
    CheckpointWrite,
    LedgerRow,
    SessionRecord,
    Store,
    TurnRecord,
    TurnState,
    open_store,
)
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


def chunk(text: str, *, thought: bool = False, author: str = "") -> t.TurnEvent:
    return t.TurnEvent(author=author, text=t.Text(text=text, partial=True, thought=thought))


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    async with open_store(settings.database) as opened:
        yield opened


async def stored(store: Store, session_id: str = "s1") -> list[t.TurnEvent]:
    rows = await store.read_events(session_id, after_seq=0, limit=10_000)
    return [t.TurnEvent.FromString(r.data) for r in rows]


async def test_events_are_numbered_from_one_and_merged_while_the_writer_is_behind(store):
    async with EventLog(store) as log:
        for i in range(100):
            log.emit("s1", "t1", chunk(f"{i} "))
        log.emit("s1", "t1", chunk("mind ", thought=True))
        final = await log.commit("s1", "t1", t.TurnEvent(text=t.Text(text="x", repeat=True)))
    events = await stored(store)
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "no gap"
    assert final.seq == events[-1].seq
    answer = "".join(e.text.text for e in events if e.text.partial and not e.text.thought)
    assert answer == "".join(f"{i} " for i in range(100)), "merging keeps every chunk, in order"
    assert len(events) < 100, "chunks queued behind the writer travel merged"
    assert [e.text.thought for e in events if e.text.partial][-1], "answer and thought never merge"


async def test_interleaved_sessions_merge_each_their_own_chunks(store):
    async with EventLog(store) as log:
        for i in range(50):
            log.emit("s1", "t1", chunk(f"a{i} "))
            log.emit("s2", "t2", chunk(f"b{i} "))
        await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text="end")))
    first, second = await stored(store, "s1"), await stored(store, "s2")
    assert "".join(e.text.text for e in first if e.HasField("text")) == "".join(
        f"a{i} " for i in range(50)
    )
    assert len(first) < 20 and len(second) < 20, (
        "another session between chunks merges nothing less"
    )
    assert [e.seq for e in second] == list(range(1, len(second) + 1))


async def test_every_event_is_stamped_and_masked_whoever_made_it(store):
    secret = "token=abcdef1234567890"
    async with EventLog(store) as log:
        log.emit("s1", "t1", chunk(f"export {secret}\n", author="run_command"))
        log.emit("s1", "t1", chunk(f"the model says {secret}"))
        await log.commit(
            "s1",
            "t1",
            t.TurnEvent(
                finished=t.TurnFinished(
                    error=t.ErrorInfo(reason="MODEL_ERROR", message=f"failed with {secret}")
                )
            ),
        )
    command, model, finished = await stored(store)
    assert all(
        (e.session_id, e.turn_id) == ("s1", "t1") and e.HasField("time") for e in (command, model)
    )
    assert "abcdef" not in command.text.text, "a tool's live output is masked"
    assert secret in model.text.text, "the model's own words are shown as written"
    assert "abcdef" not in finished.finished.error.message, "an error is masked"


async def test_numbering_continues_after_a_restart(store):
    async with EventLog(store) as log:
        await log.commit("s1", "t1", t.TurnEvent(accepted=t.Accepted()))
    async with EventLog(store) as log:
        again = await log.commit("s1", "t2", t.TurnEvent(accepted=t.Accepted()))
        other = await log.commit("s2", "t3", t.TurnEvent(accepted=t.Accepted()))
    assert (again.seq, other.seq) == (2, 1)


async def test_a_reader_that_falls_behind_is_told_where_to_resume_and_let_go(store):
    async with EventLog(store, buffer=2000) as log:
        sub = log.subscribe("s1")
        batches = sub.batches()
        for i in range(5):
            await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text=str(i))))
        got = await anext(batches)
        for _ in range(100):  # far more than 2,000 bytes, never read
            await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text="x" * 50)))
        assert sub._bytes < 2000, "what overflowed was let go, not kept for a reader away"
        with pytest.raises(BlitzError) as err:
            await anext(batches)
    assert [e.seq for e in got] == [1, 2, 3, 4, 5]
    assert err.value.reason.wire == "SLOW_CONSUMER"
    assert err.value.metadata["after_seq"] == "5", "resume after the last event delivered"


async def test_producers_wait_while_the_backlog_is_far_behind(store, monkeypatch):
    """The writer stalls; a producer that paces stops past the high mark, then goes on."""
    release = asyncio.Event()
    append = store.append_events

    async def stalled(events, **kw):
        await release.wait()
        return await append(events, **kw)

    monkeypatch.setattr(store, "append_events", stalled)
    async with EventLog(store) as log:
        log.emit("s1", "t1", t.TurnEvent(notice=t.Notice(text="first")))  # the writer takes it
        await asyncio.sleep(0)
        # Distinct events, none merging: four times the high mark in all, so the
        # producer is well past it, and little enough to store in a moment once released.
        pushed, size = 32, _BACKLOG_HIGH // 8
        for i in range(pushed):
            log.emit("s1", "t1", t.TurnEvent(notice=t.Notice(text=str(i).ljust(size, "."))))
        pacing = asyncio.create_task(log.pace("s1"))
        await asyncio.sleep(0.05)
        waited = not pacing.done()
        release.set()
        await asyncio.wait_for(pacing, 10)
    assert waited, "past the high mark, a producer waits"
    monkeypatch.undo()
    assert len(await stored(store)) == 1 + pushed, "nothing was dropped"


async def test_producers_wait_for_a_reader_that_keeps_taking_not_for_a_stalled_one(store):
    """A live reader half full holds its session's producers until it takes its events;
    one that stopped taking does not, and is cut off instead."""
    async with EventLog(store, buffer=64 * 1024, stalled=0.5) as log:
        reader = log.read("s1", after_seq=0, follow=True)
        await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text="start")))
        assert (await anext(reader)).notice.text == "start"
        for i in range(5):  # 50 KB for the reader, which is not reading yet
            await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text=str(i) * 10_000)))
        pacing = asyncio.create_task(log.pace("s1"))
        await asyncio.sleep(0.1)
        assert not pacing.done(), "the reader is half full and took events lately"
        assert (await anext(reader)).notice.text == "0" * 10_000
        await asyncio.wait_for(pacing, 5)  # it took them: the producer goes on
        await log.pace("s2")  # another session's producer never waited

        await asyncio.sleep(0.6)  # the reader stops taking: it is stalled now
        for i in range(5):
            await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text=str(i) * 10_000)))
        await asyncio.wait_for(log.pace("s1"), 0.2)
        for i in range(5):  # and past its buffer, it is cut off
            await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text=str(i) * 10_000)))
        with pytest.raises(BlitzError) as err:
            while True:
                await anext(reader)
        assert err.value.reason.wire == "SLOW_CONSUMER"
        await reader.aclose()


async def test_a_replay_then_follow_has_no_gap_and_no_duplicate(store):
    async with EventLog(store) as log:
        for text in ("a", "b", "c"):
            await log.commit("s1", "t1", chunk(text))
        reader = log.read("s1", after_seq=1, follow=True)
        replayed = [await anext(reader), await anext(reader)]
        await log.commit("s1", "t1", chunk("d"))
        live = await anext(reader)
        await reader.aclose()
    assert [(e.seq, e.text.text) for e in [*replayed, live]] == [(2, "b"), (3, "c"), (4, "d")]


async def test_an_event_too_large_for_a_client_is_cut_and_says_so(store):
    """A 30 MB tool result is stored cut to the event limit, every cut saying what it left."""
    result = t.TurnEvent(tool_result=t.ToolResult(id="c1", name="mcp_tool"))
    result.tool_result.result.update({"content": "x" * 30_000_000, "status": "ok"})
    async with EventLog(store) as log:
        committed = await log.commit("s1", "t1", result)
    [event] = await stored(store)
    assert event.ByteSize() <= EVENT_MAX and committed.ByteSize() <= EVENT_MAX
    content = event.tool_result.result["content"]
    assert content.startswith("xxxx") and content.endswith(
        "bytes cut: an event holds at most 1 MiB]"
    )
    assert event.tool_result.result["status"] == "ok", "what is small is kept whole"
    assert (event.tool_result.id, event.tool_result.name) == ("c1", "mcp_tool")


async def test_a_long_list_in_an_event_loses_its_tail_and_says_how_much(store):
    question = t.TurnEvent(
        question=t.Question(request_id="q", question="pick", options=["o"] * 3_000_000)
    )
    async with EventLog(store) as log:
        await log.commit("s1", "t1", question)
    [event] = await stored(store)
    assert event.ByteSize() <= EVENT_MAX
    assert event.question.question == "pick"
    assert event.question.options[-1].endswith("more items cut: an event holds at most 1 MiB]")


async def test_merged_chunks_stop_growing_at_the_merge_limit(store):
    piece = "y" * 1000
    async with EventLog(store) as log:
        for _ in range(300):
            log.emit("s1", "t1", chunk(piece))
        await log.commit("s1", "t1", t.TurnEvent(notice=t.Notice(text="end")))
    texts = [e.text.text for e in await stored(store) if e.HasField("text")]
    assert "".join(texts) == piece * 300, "nothing is lost"
    assert 1 < len(texts) < 300 and max(map(len, texts)) <= 64 * 1024


async def test_streamed_events_are_stored_with_no_commit_behind_them(store):
    """The writer lingers for a commit to write them with, never for ever."""
    async with EventLog(store) as log:
        sub = log.subscribe("s1")
        log.emit("s1", "t1", chunk("alone"))
        batches = sub.batches()
        (event,) = await asyncio.wait_for(anext(batches), timeout=30)
        await batches.aclose()
        assert event.seq == 1 and (await stored(store))[0].text.text == "alone"


async def test_written_returns_once_what_was_emitted_is_stored_with_its_records(store):
    async with EventLog(store) as log:
        usage = t.TurnEvent(usage=t.Usage(calls=1, input=7))
        log.emit("s1", "t1", usage, writes=(LedgerRow("s1", "t1", "demo", input=7),))
        await log.written()
        assert (await store.usage_totals("s1")).input == 7, "the ledger row rode with it"
        assert [e.seq for e in await stored(store)] == [1]
        await log.written()  # nothing queued: at once


async def test_records_with_no_event_are_written_fenced_in_the_next_batch(store):
    await store.create_session(
        SessionRecord(
            id="s1",
            owner="",
            title="",
            workspace="w",
            model="demo",
            state=1,
            create_time=1.0,
            update_time=1.0,
        )
    )
    await store.create_turn(
        TurnRecord("s1", "t1", TurnState.RUNNING, b"", 1.0, epoch=2), lease_until=1e12
    )
    taken = Checkpoint("s1", "t1", "start", b"manifest", 1.0)
    async with EventLog(store) as log:
        with pytest.raises(TurnLost):
            await log.write("s1", "t1", (CheckpointWrite(taken, {"h": b"x"}),), fence=1)
        assert await store.get_checkpoints("s1", "t1") == []
        await log.write("s1", "t1", (CheckpointWrite(taken, {"h": b"x"}),), fence=2)
    assert await store.get_checkpoints("s1", "t1") == [taken]
    assert await store.checkpoint_blobs("s1", {"h"}) == {"h": b"x"}
    assert await stored(store) == [], "no event"
