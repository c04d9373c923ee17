"""The event log on a real SQLite file: numbering, merging, and readers that fall behind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from blitz.core.event_log import EventLog
from blitz.errors import BlitzError
from blitz.store import Store, open_store
from blitz.v1 import turn_pb2 as t


def chunk(text: str, *, thought: bool = False) -> t.TurnEvent:
    return t.TurnEvent(turn_id="t1", text=t.Text(text=text, partial=True, thought=thought))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with open_store(tmp_path / "blitz.db") as opened:
        yield opened


async def test_events_are_numbered_from_one_and_merged_while_the_writer_is_behind(store):
    async with EventLog(store) as log:
        for i in range(100):
            log.emit("s1", chunk(f"{i} "))
        log.emit("s1", chunk("mind ", thought=True))
        final = await log.commit(
            "s1", t.TurnEvent(turn_id="t1", text=t.Text(text="x", repeat=True))
        )
    rows = await store.read_events("s1", after_seq=0, limit=1000)
    events = [t.TurnEvent.FromString(r.data) for r in rows]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert final.seq == events[-1].seq
    answer = "".join(e.text.text for e in events if e.text.partial and not e.text.thought)
    assert answer == "".join(f"{i} " for i in range(100)), "merging keeps every chunk, in order"
    assert len(events) < 100, "chunks queued behind the writer travel merged"
    assert [e.text.thought for e in events if e.text.partial][-1], "answer and thought never merge"


async def test_numbering_continues_after_a_restart(store):
    async with EventLog(store) as log:
        await log.commit("s1", t.TurnEvent(turn_id="t1", accepted=t.Accepted()))
    async with EventLog(store) as log:
        again = await log.commit("s1", t.TurnEvent(turn_id="t2", accepted=t.Accepted()))
        other = await log.commit("s2", t.TurnEvent(turn_id="t3", accepted=t.Accepted()))
    assert (again.seq, other.seq) == (2, 1)


async def test_a_reader_that_falls_behind_is_told_where_to_resume(store):
    async with EventLog(store, buffer=10) as log:
        sub = log.subscribe("s1")
        for i in range(25):
            await log.commit("s1", t.TurnEvent(turn_id="t1", notice=t.Notice(text=str(i))))
        got: list[t.TurnEvent] = []
        with pytest.raises(BlitzError) as err:
            async for batch in sub.batches():
                got.extend(batch)
    assert err.value.reason.wire == "SLOW_CONSUMER"
    assert [e.seq for e in got] == list(range(1, 11)), "what fit in the buffer is delivered"
    assert err.value.metadata["after_seq"] == "10", "resume from the last event delivered"


async def test_live_readers_skip_what_they_already_read(store):
    async with EventLog(store) as log:
        sub = log.subscribe("s1")
        for text in ("a", "b", "c"):
            await log.commit("s1", chunk(text))
        batches = sub.batches(after_seq=2)
        (event,) = await anext(batches)
        await batches.aclose()
    assert (event.seq, event.text.text) == (3, "c"), "merged events never repeat seen text"
