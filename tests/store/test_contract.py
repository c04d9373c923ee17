"""The store's contract: what every engine must do, run against each engine in `ENGINES`.

One test per operation of `blitz.store.Store`, named for the behaviour the core relies on.
An engine joins by adding its name to `ENGINES` and a branch to `open_engine`. PostgreSQL
runs on a throwaway cluster of the system's `postgresql` package (one per test run, a
fresh database per test); where there is none, its tests are skipped, saying why.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from blitz.store import (
    AttemptOutcome,
    AttemptRecord,
    Changes,
    Checkpoint,
    DeliveryPage,
    DeliveryRecord,
    DeliveryState,
    Expanded,
    FileOriginal,
    ImageRecord,
    LedgerRow,
    OutboxItem,
    PendingRecord,
    PendingWrite,
    Recorded,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    SessionUpdate,
    Store,
    TurnControl,
    TurnEnd,
    TurnPage,
    TurnRecord,
    TurnStart,
    TurnState,
    TurnUpdate,
    UsageTotals,
    WebhookRecord,
    open_store,
)
from blitz.store.webhook_records import DECLARED, Fairness
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

ENGINES = ["sqlite", "postgres"]

Opener = Callable[[], AbstractAsyncContextManager[Store]]


@pytest.fixture(params=ENGINES)
def open_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the same database of one engine, again and again (to check what survives)."""
    if request.param == "sqlite":
        return lambda: open_store(f"sqlite:///{tmp_path}/blitz.db")
    url: str = request.getfixturevalue("postgres_database")
    return lambda: open_store(url)


@pytest.fixture
async def store(open_engine: Opener) -> AsyncIterator[Store]:
    async with open_engine() as opened:
        yield opened


def session(id: str = "s1", **kw: object) -> SessionRecord:
    base: dict[str, object] = dict(
        owner="", title="t", workspace=id, model="demo", state=1, create_time=1.0, update_time=1.0
    )
    base.update(kw)
    return SessionRecord(id=id, **base)  # type: ignore[arg-type]


def event(session_id: str, turn_id: str = "t1", text: str = "x") -> t.TurnEvent:
    return t.TurnEvent(session_id=session_id, turn_id=turn_id, notice=t.Notice(text=text))


def turn(turn_id: str = "t1", state: TurnState = TurnState.RUNNING, **kw: object) -> TurnRecord:
    return TurnRecord("s1", turn_id, state, b"turn", 1.0, **kw)  # type: ignore[arg-type]


# Sessions


async def test_a_session_reads_back_as_created_with_no_events_task_list_or_plan(store):
    made = session(labels={"team": "a"}, approval_timeout=30.0)
    await store.create_session(made)
    got = await store.get_session("s1")
    assert got == made
    assert (got.last_seq, got.tasks, got.plan) == (0, None, None)
    assert await store.get_session("nope") is None


async def test_sessions_page_newest_first_and_filter_by_owner_label_and_state(store):
    for i in range(5):
        labels = {"team": "a" if i % 2 else "b"}
        await store.create_session(session(f"s{i}", create_time=float(i), labels=labels))
    await store.create_session(session("theirs", owner="someone", create_time=9.0))

    def ids(records: list[SessionRecord]) -> list[str]:
        return [r.id for r in records]

    assert ids(await store.list_sessions(SessionQuery(owner="", limit=2))) == ["s4", "s3"]
    after = SessionQuery(owner="", limit=10, before=(3.0, "s3"))
    assert ids(await store.list_sessions(after)) == ["s2", "s1", "s0"]
    team = SessionQuery(owner="", limit=10, labels={"team": "a"})
    assert ids(await store.list_sessions(team)) == ["s3", "s1"]
    await store.update_session("s1", SessionChange(update_time=9.0, state=4))
    assert ids(await store.list_sessions(SessionQuery(owner="", limit=10, state=4))) == ["s1"]
    assert ids(await store.list_sessions(SessionQuery(owner="someone", limit=10))) == ["theirs"]


async def test_an_update_changes_only_the_fields_it_names(store):
    await store.create_session(session())
    await store.update_session(
        "s1",
        SessionChange(update_time=2.0, state=2, turn_id="t1", tasks=b"tasks", plan=b"plan"),
    )
    await store.update_session("s1", SessionChange(update_time=3.0, model="other"))
    got = await store.get_session("s1")
    assert got is not None
    assert (got.state, got.turn_id, got.model, got.tasks, got.plan, got.update_time) == (
        2,
        "t1",
        "other",
        b"tasks",
        b"plan",
        3.0,
    )
    await store.update_session("s1", SessionChange(update_time=4.0, turn_id="", plan=b""))
    got = await store.get_session("s1")
    assert got is not None and (got.turn_id, got.plan, got.tasks) == ("", None, b"tasks")


async def test_an_update_sets_title_labels_and_approval_timeout_and_clears_the_timeout(store):
    await store.create_session(session(labels={"a": "1"}, approval_timeout=30.0))
    change = SessionChange(update_time=2.0, title="new", labels={"b": "2"}, approval_timeout=5.0)
    assert await store.update_session("s1", change)
    got = await store.get_session("s1")
    assert got is not None
    assert (got.title, got.labels, got.approval_timeout) == ("new", {"b": "2"}, 5.0)
    assert (await store.list_sessions(SessionQuery(owner="", limit=5, labels={"b": "2"})))[0].id
    await store.update_session("s1", SessionChange(update_time=3.0, approval_timeout=0.0))
    got = await store.get_session("s1")
    assert got is not None and (got.title, got.approval_timeout) == ("new", None)


async def test_a_deleted_session_leaves_nothing_but_its_always_rules(store):
    await store.create_session(session())
    await store.create_session(session("s2"))
    for sid in ("s1", "s2"):
        await store.create_turn(replace(turn(), session_id=sid), lease_until=9.0)
        await store.append_events([event(sid)])
        await store.add_ledger(LedgerRow(sid, "t1", "demo", input=1))
        await store.set_history(sid, b"h")
        await store.keep_turn_history(sid, "t1", newest=20)
        await store.keep_original(FileOriginal(sid, "a.txt", b"a"))
        await store.put_checkpoint(Checkpoint(sid, "t1", "start", b"m", 1.0), {"h1": b"one"})
        await store.add_image(ImageRecord(f"img-{sid}", sid, "image/png", b"png", 1.0))
        await store.put_pending([PendingRecord(sid, "r1", "t1", b"e")])
    always = RuleRecord("r-always", s.RULE_SCOPE_ALWAYS, 1, "x", "s1", "w", "", 1.0)
    await store.add_rule(always)
    await store.add_rule(RuleRecord("r-session", s.RULE_SCOPE_SESSION, 1, "x", "s1", "w", "", 1.0))

    assert await store.delete_session("s1")
    assert not await store.delete_session("s1")
    assert await store.get_session("s1") is None
    assert await store.get_turn("s1", "t1") is None
    assert await store.read_events("s1", after_seq=0, limit=10) == []
    assert await store.ledger("s1") == []
    assert await store.get_history("s1") is None
    assert await store.get_turn_history("s1", "t1") is None
    assert await store.originals("s1") == []
    assert await store.checkpointed_turns("s1") == []
    assert await store.checkpoint_blob_hashes("s1") == set()
    assert await store.get_image("s1", "img-s1") is None
    assert await store.list_pending("s1", open_only=False) == []
    assert await store.rules_for(session_id="s1", caller="", workspace="w") == [always]
    # The other session is whole, and a new session may take the old one's id and seqs.
    assert len(await store.read_events("s2", after_seq=0, limit=10)) == 1
    assert await store.get_turn_history("s2", "t1") == b"h"
    assert await store.checkpoint_blobs("s2", ["h1"]) == {"h1": b"one"}
    await store.create_session(session())
    again = event("s1")
    await store.append_events([again])
    assert again.seq == 1


# Turns


async def test_turns_page_oldest_first(store):
    await store.create_session(session())
    for i, turn_id in enumerate(("tc", "ta", "tb")):
        rec = replace(turn(turn_id), create_time=float(i // 2))
        await store.create_turn(rec, lease_until=9.0)
    first = await store.list_turns(TurnPage(session_id="s1", limit=2))
    assert [r.turn_id for r in first] == ["ta", "tc"]  # at one time: by id
    rest = await store.list_turns(TurnPage(session_id="s1", limit=2, after=(0.0, "tc")))
    assert [r.turn_id for r in rest] == ["tb"]
    assert await store.list_turns(TurnPage(session_id="s2", limit=2)) == []


async def test_a_turns_history_is_the_sessions_when_kept(store):
    await store.create_session(session())
    for n, tid in enumerate(("t0", "t1", "t2")):
        await store.create_turn(replace(turn(), turn_id=tid, create_time=float(n)), lease_until=9.0)
    await store.keep_turn_history("s1", "t0", newest=20)  # no history yet: an empty one
    await store.set_history("s1", b"one")
    await store.keep_turn_history("s1", "t1", newest=20)
    await store.set_history("s1", b"two")
    assert await store.get_turn_history("s1", "t0") == b""
    assert await store.get_turn_history("s1", "t1") == b"one"
    assert await store.get_turn_history("s1", "t2") is None
    # Only the newest turns' copies are kept.
    await store.keep_turn_history("s1", "t2", newest=2)
    assert await store.get_turn_history("s1", "t0") is None
    assert await store.get_turn_history("s1", "t1") == b"one"
    assert await store.get_turn_history("s1", "t2") == b"two"


async def test_a_rewind_sets_the_history_and_forgets_the_dropped_turns_histories(store):
    await store.create_session(session())
    for n, tid in enumerate(("t0", "t1", "t2")):
        await store.create_turn(replace(turn(), turn_id=tid, create_time=float(n)), lease_until=9.0)
        await store.set_history("s1", f"h{n}".encode())
        await store.keep_turn_history("s1", tid, newest=20)
    change = SessionChange(update_time=2.0, tasks=b"", plan=b"", expect_turn_id="")
    assert await store.rewind("s1", history=b"h0", dropped=["t1", "t2"], change=change)
    assert await store.get_history("s1") == b"h0"
    assert await store.get_turn_history("s1", "t0") == b"h0"
    assert await store.get_turn_history("s1", "t1") is None
    assert await store.get_turn_history("s1", "t2") is None
    got = await store.get_session("s1")
    assert got is not None and (got.tasks, got.update_time) == (b"", 2.0)


async def test_a_rewind_whose_change_does_not_apply_writes_nothing(store):
    await store.create_session(session())
    await store.create_turn(turn(), lease_until=9.0)
    await store.set_history("s1", b"now")
    await store.keep_turn_history("s1", "t1", newest=20)
    await store.update_session("s1", SessionChange(update_time=2.0, turn_id="t9"))
    change = SessionChange(update_time=3.0, plan=b"", expect_turn_id="")
    assert not await store.rewind("s1", history=b"then", dropped=["t1"], change=change)
    assert await store.get_history("s1") == b"now"
    assert await store.get_turn_history("s1", "t1") == b"now"


# Workspace checkpoints


async def test_a_checkpoint_reads_back_with_its_blobs_and_a_second_replaces_it(store):
    start = Checkpoint("s1", "t1", "start", b"manifest", 1.0)
    await store.put_checkpoint(start, {"aa": b"first", "bb": b""})
    end = Checkpoint("s1", "t1", "end", None, 2.0)  # the same as the start
    await store.put_checkpoint(end, {})
    assert await store.get_checkpoints("s1", "t1") == [start, end]
    again = Checkpoint("s1", "t1", "end", b"other", 3.0)
    # A blob the session has already is kept as it was.
    await store.put_checkpoint(again, {"aa": b"ignored", "cc": b"third"})
    assert await store.get_checkpoints("s1", "t1") == [start, again]
    assert await store.checkpoint_blobs("s1", ["aa", "bb", "cc", "zz"]) == {
        "aa": b"first",
        "bb": b"",
        "cc": b"third",
    }
    assert await store.checkpoint_blobs("s1", []) == {}
    assert await store.checkpoint_blobs("s2", ["aa"]) == {}
    assert await store.checkpoint_blob_hashes("s1") == {"aa", "bb", "cc"}
    assert await store.get_checkpoints("s1", "t2") == []


async def test_checkpointed_turns_are_those_with_any_checkpoint_oldest_first(store):
    await store.put_checkpoint(Checkpoint("s1", "tb", "start", b"m", 2.0), {})
    await store.put_checkpoint(Checkpoint("s1", "ta", "start", b"m", 1.0), {})
    await store.put_checkpoint(Checkpoint("s1", "ta", "end", b"m", 4.0), {})
    # A turn that changed nothing stores its end alone (core/files/checkpoints.py).
    await store.put_checkpoint(Checkpoint("s1", "tc", "end", None, 3.0), {})
    await store.put_checkpoint(Checkpoint("s2", "tx", "start", b"m", 0.5), {})
    assert await store.checkpointed_turns("s1") == ["ta", "tb", "tc"]
    assert await store.checkpointed_turns("s3") == []


async def test_dropped_checkpoints_and_blobs_go_and_the_others_stay(store):
    for n, tid in enumerate(("t1", "t2")):
        for at in ("start", "end"):
            cp = Checkpoint("s1", tid, at, b"m", float(n))
            await store.put_checkpoint(cp, {f"{tid}-{at}": b"x", "shared": b"s"})
    await store.put_checkpoint(Checkpoint("s2", "t1", "start", b"m", 0.0), {"t1-start": b"y"})
    await store.drop_checkpoints("s1", turn_ids=["t1"], hashes=["t1-start", "t1-end"])
    assert await store.get_checkpoints("s1", "t1") == []
    assert len(await store.get_checkpoints("s1", "t2")) == 2
    assert await store.checkpoint_blob_hashes("s1") == {"t2-start", "t2-end", "shared"}
    assert await store.checkpoint_blobs("s2", ["t1-start"]) == {"t1-start": b"y"}
    await store.drop_checkpoints("s1", turn_ids=[], hashes=[])


async def test_a_files_first_original_is_kept(store):
    assert await store.keep_original(FileOriginal("s1", "b.txt", None))
    assert await store.keep_original(FileOriginal("s1", "a.txt", b"first"))
    assert not await store.keep_original(FileOriginal("s1", "a.txt", b"second"))
    assert await store.originals("s1") == [
        FileOriginal("s1", "a.txt", b"first"),
        FileOriginal("s1", "b.txt", None),
    ]
    assert await store.originals("s2") == []


async def test_a_turn_reads_back_and_its_update_writes_every_mutable_field(store):
    made = turn(deadline=5.0, usage_before=b"u", owner="r1", epoch=1)
    assert await store.create_turn(made, lease_until=10.0)
    assert await store.get_turn("s1", "t1") == made
    made.state, made.first_seq, made.model_calls, made.cost_usd = TurnState.PARKED, 3, 2, 0.5
    made.history = b"history"
    assert await store.update_turn(made)
    made.owner = ""  # a parked turn is held by no one
    assert await store.get_turn("s1", "t1") == made
    assert await store.get_turn("s1", "nope") is None


async def test_a_turn_starts_only_in_a_session_as_it_expects(store):
    await store.create_session(session(state=s.SESSION_STATE_IDLE))
    busy = SessionChange(
        update_time=2.0,
        state=s.SESSION_STATE_RUNNING,
        turn_id="t1",
        expect_state=s.SESSION_STATE_IDLE,
    )
    results = await asyncio.gather(
        *(
            store.create_turn(turn(f"t{i}", owner="r1", epoch=1), lease_until=9.0, session=busy)
            for i in range(1, 6)
        )
    )
    assert sorted(results) == [False] * 4 + [True], "one turn takes the idle session"
    assert len(await store.turns_in_state(TurnState.RUNNING)) == 1, "the others left nothing"
    got = await store.get_session("s1")
    assert got is not None and (got.state, got.turn_id) == (s.SESSION_STATE_RUNNING, "t1")


async def test_a_closed_session_stays_closed(store):
    await store.create_session(session(state=s.SESSION_STATE_CLOSED, turn_id="t1"))
    idle = SessionChange(update_time=2.0, state=s.SESSION_STATE_IDLE, turn_id="")
    assert await store.update_session("s1", idle)
    got = await store.get_session("s1")
    assert got is not None and (got.state, got.turn_id) == (s.SESSION_STATE_CLOSED, "")
    stale = SessionChange(update_time=3.0, state=s.SESSION_STATE_IDLE, expect_turn_id="t1")
    assert not await store.update_session("s1", stale), "not the session's turn any more"


async def test_a_parked_turn_is_taken_by_one_claimer_and_its_epoch_raised(store):
    await store.create_turn(turn(state=TurnState.PARKED, epoch=3), lease_until=0.0)
    claims = await asyncio.gather(
        *(
            store.claim_turn("s1", "t1", state=TurnState.PARKED, owner=f"r{i}", lease_until=100.0)
            for i in range(5)
        )
    )
    (won,) = [c for c in claims if c is not None]
    assert (won.state, won.epoch, won.owner) == (TurnState.RUNNING, 4, won.owner)
    assert [r.turn_id for r in await store.turns_in_state(TurnState.RUNNING)] == ["t1"]
    assert await store.turns_in_state(TurnState.PARKED) == []
    assert (
        await store.count_turns(TurnState.RUNNING),
        await store.count_turns(TurnState.PARKED),
    ) == (1, 0)


async def test_a_holder_whose_turn_was_taken_over_can_write_nothing_of_it(store):
    held = turn(owner="r1", epoch=1)
    await store.create_turn(held, lease_until=10.0)
    assert await store.renew_leases("r1", lease_until=20.0) == [
        TurnControl("s1", "t1", 1, cancel=False, steer=False)
    ]
    assert not await store.claim_turn(
        "s1", "t1", state=TurnState.RUNNING, owner="r2", lease_until=50.0, expired_before=15.0
    ), "its lease has not ended"
    assert [
        r.turn_id for r in await store.turns_in_state(TurnState.RUNNING, lease_ended_before=25.0)
    ] == ["t1"]
    taken = await store.claim_turn(
        "s1", "t1", state=TurnState.RUNNING, owner="r2", lease_until=50.0, expired_before=25.0
    )
    assert taken is not None and (taken.owner, taken.epoch) == ("r2", 2)
    assert await store.renew_leases("r1", lease_until=60.0) == [], "r1 holds it no more"
    held.state = TurnState.FINISHED
    assert not await store.update_turn(held), "the old holder's write is fenced"
    late = [event("s1", text="stale"), event("s2", "t9", text="other")]
    lost = await store.append_events(late, fences={("s1", "t1"): 1})
    assert lost == {("s1", "t1")}
    assert [e.seq for e in late] == [0, 1], "the fenced event left out, the other stored"
    assert await store.read_events("s1", after_seq=0, limit=10) == []
    ours = [event("s1", text="new holder")]
    assert await store.append_events(ours, fences={("s1", "t1"): 2}) == set()
    assert ours[0].seq == 1


async def test_a_batch_with_many_fenced_turns_keeps_the_events_of_those_still_held(store):
    """The fences of one append are looked up together (hundreds at once): each turn's
    events are stored only if it still runs at its fence's epoch."""
    count = 300
    for i in range(count):
        await store.create_session(session(f"s{i}"))
        state = TurnState.PARKED if i % 7 == 0 else TurnState.RUNNING
        await store.create_turn(
            TurnRecord(f"s{i}", "t1", state, b"turn", 1.0, owner="r1", epoch=1), lease_until=10.0
        )
    # Odd turns are fenced at an epoch they are not held at; every seventh is not running.
    fences = {(f"s{i}", "t1"): 1 if i % 2 == 0 else 2 for i in range(count)}
    events = [event(f"s{i}") for i in range(count)]
    lost = await store.append_events(events, fences=fences)
    expected = {(f"s{i}", "t1") for i in range(count) if i % 2 or i % 7 == 0}
    assert lost == expected
    assert [e.seq for e in events] == [0 if (e.session_id, "t1") in expected else 1 for e in events]


async def test_a_lease_renewer_renews_on_a_thread_of_its_own(store):
    await store.create_turn(turn(owner="r1", epoch=1), lease_until=10.0)
    renewer, other = store.lease_renewer("r1", timeout=5.0), store.lease_renewer("r2", timeout=5.0)
    try:
        held = await asyncio.to_thread(renewer.renew, 40.0)
        assert held == [TurnControl("s1", "t1", 1, cancel=False, steer=False)]
        assert await store.turns_in_state(TurnState.RUNNING, lease_ended_before=30.0) == []
        assert await asyncio.to_thread(other.renew, 50.0) == [], "r2 holds nothing"
    finally:
        renewer.close()
        other.close()


async def test_cancels_and_steer_reach_the_holder_until_the_turn_takes_its_leftovers(store):
    await store.create_turn(turn(owner="r1", epoch=1), lease_until=10.0)
    assert await store.add_steer("s1", "t1", "first")
    assert await store.add_steer("s1", "t1", "second")
    assert await store.request_cancel("s1", "t1")
    assert await store.renew_leases("r1", lease_until=20.0) == [
        TurnControl("s1", "t1", 1, cancel=True, steer=True)
    ]
    assert await store.take_steer("s1", "t1") == ["first", "second"]
    assert await store.take_steer("s1", "t1") == []
    assert await store.add_steer("s1", "t1", "third")
    assert await store.take_steer("s1", "t1", close=True) == ["third"]
    assert not await store.add_steer("s1", "t1", "too late"), "closed: it comes back instead"
    finished = turn(state=TurnState.FINISHED, turn_id="t2")
    await store.create_turn(finished, lease_until=0.0)
    assert not await store.request_cancel("s1", "t2")
    assert not await store.add_steer("s1", "t2", "x")


async def test_parked_turns_that_need_someone_are_found(store):
    # name: (deadline, request's expiry, its resolution, session state, session's turn)
    cases = {
        "waiting": (100.0, None, None, s.SESSION_STATE_PARKED, "waiting"),
        "late": (5.0, None, None, s.SESSION_STATE_PARKED, "late"),
        "expired": (None, 5.0, None, s.SESSION_STATE_PARKED, "expired"),
        "answered": (None, None, "{}", s.SESSION_STATE_PARKED, "answered"),
        "fresh": (None, None, "{}", s.SESSION_STATE_PARKED, "fresh"),
        "closed": (None, None, None, s.SESSION_STATE_CLOSED, "closed"),
        "let go": (None, None, None, s.SESSION_STATE_IDLE, ""),
    }
    for name, (deadline, expires, resolution, state, current) in cases.items():
        await store.create_session(session(name, state=state, turn_id=current))
        rec = TurnRecord(name, name, TurnState.PARKED, b"turn", 1.0, deadline=deadline)
        await store.create_turn(rec, lease_until=0.0)
        await store.put_pending([PendingRecord(name, "r1", name, b"e", expires=expires)])
        if resolution is not None and name != "fresh":
            assert await store.resolve_pending(name, "r1", resolution)
    cutoff = time.time() + 1  # "answered" was answered before it
    due = await store.parked_turns_due(now=10.0, settled_before=cutoff)
    assert sorted(r.turn_id for r in due) == ["answered", "closed", "expired", "late", "let go"]
    assert await store.resolve_pending("fresh", "r1", "{}")
    due = await store.parked_turns_due(now=10.0, settled_before=cutoff - 1)
    assert "fresh" not in {r.turn_id for r in due}, "just answered: its resolver resumes it"


# Events


async def test_events_are_numbered_per_session_from_one_without_gaps(store):
    batch = [event("s1"), event("s2"), event("s1"), event("s1"), event("s2")]
    await store.append_events(batch)
    assert [(e.session_id, e.seq) for e in batch] == [
        ("s1", 1),
        ("s2", 1),
        ("s1", 2),
        ("s1", 3),
        ("s2", 2),
    ]
    more = [event("s1")]
    await store.append_events(more)
    assert more[0].seq == 4
    rows = await store.read_events("s1", after_seq=1, limit=2)
    assert [r.seq for r in rows] == [2, 3]
    assert [t.TurnEvent.FromString(r.data).seq for r in rows] == [2, 3], "stored numbered"


async def test_an_append_that_fails_leaves_the_numbering_where_it_was(store):
    await store.create_session(session())
    await store.append_events([event("s1"), event("s1")])
    start = TurnStart(turn("t1", epoch=1), lease_until=time.time() + 60)
    await store.append_events([event("s1", "t1")], writes=[start])
    failing = [event("s1"), event("s1")]
    # The turn's row is there already: each engine refuses it as a key it holds.
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):
        await store.append_events(failing, writes=[start])
    assert [e.seq for e in failing] == [0, 0]
    after = [event("s1")]
    await store.append_events(after)
    assert after[0].seq == 4
    assert (await store.last_seqs(["s1"])) == {"s1": 4}


async def test_a_session_deleted_and_made_again_numbers_from_one(store):
    await store.create_session(session())
    await store.append_events([event("s1"), event("s1")])
    assert await store.delete_session("s1")
    await store.create_session(session())
    again = [event("s1")]
    await store.append_events(again)
    assert again[0].seq == 1


async def test_a_session_knows_its_last_seq(store):
    await store.create_session(session())
    await store.append_events([event("s1") for _ in range(3)])
    got = await store.get_session("s1")
    assert got is not None and got.last_seq == 3
    (listed,) = await store.list_sessions(SessionQuery(owner="", limit=10))
    assert listed.last_seq == 3


async def test_appenders_at_once_get_distinct_contiguous_seqs(store):
    async def append(n: int) -> list[int]:
        batch = [event("s1", text=f"{n}-{i}") for i in range(5)]
        await store.append_events(batch)
        return [e.seq for e in batch]

    numbered = await asyncio.gather(*(append(n) for n in range(10)))
    assert sorted(seq for seqs in numbered for seq in seqs) == list(range(1, 51))
    for seqs in numbered:
        assert seqs == list(range(seqs[0], seqs[0] + 5)), "a batch is numbered as one"


async def test_a_turns_accepted_event_sets_its_first_seq_once(store):
    await store.create_session(session())
    await store.create_turn(turn(), lease_until=9.0)
    accepted = t.TurnEvent(session_id="s1", turn_id="t1", accepted=t.Accepted())
    await store.append_events([event("s1", "t0"), event("s1", "t0"), accepted, event("s1")])
    got = await store.get_turn("s1", "t1")
    assert got is not None and got.first_seq == 3 == accepted.seq
    again = t.TurnEvent(session_id="s1", turn_id="t1", accepted=t.Accepted())
    await store.append_events([again])
    got = await store.get_turn("s1", "t1")
    assert got is not None and got.first_seq == 3, "set once, by the turn's first event"


async def test_the_last_seqs_of_sessions(store):
    await store.append_events([event("s1"), event("s2"), event("s1")])
    assert await store.last_seqs(["s1", "s2", "s3"]) == {"s1": 2, "s2": 1}


async def test_the_last_event_of_a_turn(store):
    await store.append_events([event("s1", "t1"), event("s1", "t1"), event("s1", "t2")])
    last = await store.last_event_of_turn("s1", "t1")
    assert last is not None and (last.seq, last.turn_id) == (2, "t1")
    assert await store.last_event_of_turn("s1", "t9") is None


# Pending requests


async def test_pending_requests_are_listed_by_turn_request_and_openness(store):
    await store.put_pending(
        [
            PendingRecord("s1", "r1", "t1", b"a", expires=5.0),
            PendingRecord("s1", "r2", "t1", b"b"),
            PendingRecord("s1", "r3", "t2", b"c"),
        ]
    )
    assert await store.resolve_pending("s1", "r2", "{}")
    assert [p.request_id for p in await store.list_pending("s1")] == ["r1", "r3"]
    assert [p.request_id for p in await store.list_pending("s1", turn_id="t1")] == ["r1"]
    everything = await store.list_pending("s1", turn_id="t1", open_only=False)
    assert sorted(p.request_id for p in everything) == ["r1", "r2"]
    (one,) = await store.list_pending("s1", request_id="r1")
    assert one == PendingRecord("s1", "r1", "t1", b"a", expires=5.0)
    assert await store.list_pending("s2") == []


async def test_a_request_id_used_again_replaces_the_old_request(store):
    await store.put_pending([PendingRecord("s1", "r1", "t1", b"old")])
    assert await store.resolve_pending("s1", "r1", "{}")
    await store.put_pending([PendingRecord("s1", "r1", "t2", b"new")])
    (again,) = await store.list_pending("s1", request_id="r1")
    assert (again.turn_id, again.event, again.resolution) == ("t2", b"new", None)


async def test_a_parking_turns_writes_go_with_its_announcements_or_not_at_all(store):
    await store.create_session(session(turn_id="t1", state=s.SESSION_STATE_RUNNING))
    await store.create_turn(turn(epoch=1), lease_until=time.time() + 60)

    def parking(epoch: int) -> tuple[t.TurnEvent, t.TurnEvent, list[object]]:
        asked = t.TurnEvent(
            session_id="s1", turn_id="t1", approval_request=t.ApprovalRequest(request_id="r1")
        )
        parked = t.TurnEvent(session_id="s1", turn_id="t1", notice=t.Notice(text="parked"))
        writes = [
            PendingWrite(PendingRecord("s1", "r1", "t1", b"unnumbered"), announced=asked),
            PendingWrite(PendingRecord("s1", "r0", "t1", b"by rule", resolution="{}")),
            TurnUpdate("s1", "t1", epoch, TurnState.PARKED, 1, 2, 0.25, b"history"),
            SessionUpdate(
                "s1",
                "t1",
                SessionChange(update_time=2.0, state=s.SESSION_STATE_PARKED, expect_turn_id="t1"),
            ),
            LedgerRow("s1", "t1", "demo", input=7, output=3, time=2.0),
        ]
        return asked, parked, writes

    asked, parked, writes = parking(epoch=7)
    lost = await store.append_events([asked, parked], fences={("s1", "t1"): 7}, writes=writes)
    assert lost == {("s1", "t1")}, "a holder that lost the turn writes none of it"
    assert await store.list_pending("s1", open_only=False) == []
    assert (await store.usage_totals("s1")).calls == 0
    still = await store.get_turn("s1", "t1")
    assert still is not None and still.state == TurnState.RUNNING

    asked, parked, writes = parking(epoch=1)
    assert (
        await store.append_events([asked, parked], fences={("s1", "t1"): 1}, writes=writes) == set()
    )
    requests = {p.request_id: p for p in await store.list_pending("s1", open_only=False)}
    assert requests["r1"].event == asked.SerializeToString(), "the request as announced"
    assert t.TurnEvent.FromString(requests["r1"].event).seq == asked.seq > 0
    assert (requests["r0"].event, requests["r0"].resolution) == (b"by rule", "{}")
    rec = await store.get_turn("s1", "t1")
    assert rec is not None and rec.state == TurnState.PARKED
    assert (rec.model_calls, rec.cost_usd, rec.history) == (2, 0.25, b"history")
    got = await store.get_session("s1")
    assert got is not None and got.state == s.SESSION_STATE_PARKED
    assert (await store.usage_totals("s1")).input == 7


async def test_a_turns_start_is_written_with_its_accepted_if_it_takes_the_session(store):
    await store.create_session(session())
    claim = SessionChange(
        update_time=2.0,
        state=s.SESSION_STATE_RUNNING,
        turn_id="t1",
        expect_state=s.SESSION_STATE_IDLE,
    )

    def accepted(turn_id: str) -> t.TurnEvent:
        return t.TurnEvent(session_id="s1", turn_id=turn_id, accepted=t.Accepted())

    first = accepted("t1")
    start = TurnStart(turn("t1", epoch=1), lease_until=time.time() + 60, claim=claim)
    fenced = {("s1", "t1"): 1}
    assert await store.append_events([first], fences=fenced, writes=[start]) == set()
    rec = await store.get_turn("s1", "t1")
    assert rec is not None and rec.first_seq == first.seq == 1
    got = await store.get_session("s1")
    assert got is not None and (got.state, got.turn_id) == (s.SESSION_STATE_RUNNING, "t1")

    # The session is taken: a second start writes nothing of its turn, the rest of the
    # batch is written.
    other = event("s1", "t0")
    second = accepted("t2")
    start = TurnStart(turn("t2", epoch=1), lease_until=time.time() + 60, claim=claim)
    lost = await store.append_events([other, second], fences={("s1", "t2"): 1}, writes=[start])
    assert lost == {("s1", "t2")}
    assert await store.get_turn("s1", "t2") is None
    assert (other.seq, second.seq) == (2, 0)


async def test_only_the_first_resolution_wins(store):
    await store.put_pending([PendingRecord("s1", "r1", "t1", b"ev")])
    results = await asyncio.gather(
        *(store.resolve_pending("s1", "r1", f'{{"n": {i}}}') for i in range(5))
    )
    assert sorted(results) == [False] * 4 + [True]
    (done,) = await store.list_pending("s1", open_only=False)
    assert done.resolution is not None and done.resolution.startswith('{"n"')


# Usage ledger


async def test_the_ledger_keeps_entries_in_order_and_sums_them(store):
    assert await store.usage_totals("s1") == UsageTotals()
    first = LedgerRow("s1", "t1", "a", input=10, cached=4, output=5, cost_usd=0.25, time=1.0)
    first.search_queries = 1
    second = LedgerRow("s1", "t2", "b", input=7, cache_write=2, output=1, priced=False, time=2.0)
    for row in (first, second, LedgerRow("s2", "t9", "a", input=1000, cost_usd=9.0)):
        await store.add_ledger(row)
    assert await store.ledger("s1") == [first, second]
    assert await store.usage_totals("s1") == UsageTotals(
        calls=2,
        input=17,
        cached=4,
        cache_write=2,
        output=6,
        cost_usd=0.25,
        priced=False,
        search_queries=1,
        last_prompt=7,  # input counts the cache-write tokens already
    )


async def test_the_ledger_keeps_unknown_token_counts_apart_from_zero(store):
    known = LedgerRow("s1", "t1", "a", input=0, output=0, time=1.0)
    unknown = LedgerRow("s1", "t1", "b", time=2.0, tokens_unknown=True)
    await store.add_ledger(known)
    assert not (await store.usage_totals("s1")).tokens_unknown, "zero tokens, reported"
    await store.add_ledger(unknown)
    assert await store.ledger("s1") == [known, unknown]
    assert (await store.usage_totals("s1")).tokens_unknown, "a sum over an unknown"


# Approval rules


async def test_rules_apply_to_their_session_or_their_callers_sessions_in_the_workspace(store):
    def rule(id: str, scope: int, **kw: object) -> RuleRecord:
        base: dict[str, object] = dict(
            kind=t.ACTION_KIND_COMMAND,
            scope_label=f"command: {id}",
            session_id="s1",
            workspace="w",
            caller="alice",
            create_time=float(len(id)),
        )
        base.update(kw)
        return RuleRecord(id, scope, **base)  # type: ignore[arg-type]

    # Read back whole, what it matches and whether it denies included.
    mine = rule(
        "a",
        s.RULE_SCOPE_SESSION,
        match_kind=t.RULE_MATCH_COMMAND_PREFIX,
        pattern="pytest -q",
        effect=t.RULE_EFFECT_DENY,
    )
    always = rule("bb", s.RULE_SCOPE_ALWAYS, session_id="s0")
    for r in (
        mine,
        always,
        rule("ccc", s.RULE_SCOPE_SESSION, session_id="s2"),
        rule("dddd", s.RULE_SCOPE_ALWAYS, caller="bob"),
    ):
        await store.add_rule(r)
    # ALWAYS is the caller's in one workspace: one of another workspace does not apply.
    elsewhere = rule("eeeee", s.RULE_SCOPE_ALWAYS, workspace="other")
    await store.add_rule(elsewhere)
    ended = rule("ffffff", s.RULE_SCOPE_SESSION, expire_time=5.0)
    await store.add_rule(ended)
    here = await store.rules_for(session_id="s1", caller="alice", workspace="w", now=10.0)
    assert here == [mine, always]
    early = await store.rules_for(session_id="s1", caller="alice", workspace="w", now=1.0)
    assert early == [mine, always, ended], "a rule applies until it expires"
    there = await store.rules_for(session_id="s1", caller="alice", workspace="other", now=10.0)
    assert there == [mine, elsewhere]
    assert await store.delete_rule("a")
    assert not await store.delete_rule("a")
    assert await store.rules_for(session_id="s1", caller="alice", workspace="w") == [always]


# Images and agent state


async def test_an_image_belongs_to_its_session(store):
    image = ImageRecord("img1", "s1", "image/png", b"\x89PNG data", 1.0)
    await store.add_image(image)
    assert await store.get_image("s1", "img1") == image
    assert await store.get_image("s2", "img1") is None


async def test_the_history_is_kept_replaced_and_survives_reopening(open_engine: Opener):
    async with open_engine() as first:
        await first.create_session(session())
        assert await first.get_history("s1") is None
        await first.set_history("s1", b"one")
        await first.set_history("s1", b"two")
        await first.add_ledger(LedgerRow("s1", "t1", "demo", input=10, priced=False))
    async with open_engine() as second:
        assert await second.get_history("s1") == b"two"
        (row,) = await second.ledger("s1")
        assert (row.input, row.priced) == (10, False)


async def test_many_tasks_writing_at_once_all_succeed(store):
    # As a busy server does: the event writer's batches beside turns parking and resolving.
    await store.create_session(session())

    async def write_events() -> None:
        for _ in range(300):
            await store.append_events([event("s1", text="x" * 100) for _ in range(10)])

    async def park_and_resolve(task: int) -> None:
        for i in range(300):
            request_id = f"r{task}-{i}"
            await store.put_pending([PendingRecord("s1", request_id, "t1", b"event")])
            await store.get_session("s1")
            assert await store.resolve_pending("s1", request_id, "{}")

    await asyncio.gather(write_events(), *(park_and_resolve(task) for task in range(6)))
    got = await store.get_session("s1")
    assert got is not None and got.last_seq == 3000


async def test_appends_and_requests_are_announced_where_processes_share_the_store(
    open_engine: Opener,
):
    async with open_engine() as store, open_engine() as other:
        if not store.shared:
            pytest.skip("one process owns a SQLite file: it announces nothing")
        changes = aiter(other.changes())
        assert await asyncio.wait_for(anext(changes), 10) == Changes(), "it listens"
        await store.append_events([event("s1"), event("s2"), event("s1")])
        announced = await asyncio.wait_for(anext(changes), 10)
        await store.create_turn(turn(owner="r1", epoch=1), lease_until=10.0)
        await store.add_steer("s1", "t1", "go left")
        steered = await asyncio.wait_for(anext(changes), 10)
        await changes.aclose()  # type: ignore[attr-defined]
    assert announced == Changes(seqs={"s1": 2, "s2": 1}), "ids and seqs, one for the batch"
    assert steered == Changes(turns=(("s1", "t1"),)), "a request names its turn, no text"


async def test_a_workspace_name_is_its_principals_first_folder_for_good(store, open_engine):
    first = await store.workspace_folder("alice", "acme", new="@alice/acme")
    again = await store.workspace_folder("alice", "acme", new="@alice/other")
    bobs = await store.workspace_folder("bob", "acme", new="@bob/acme")
    assert (first, again, bobs) == ("@alice/acme", "@alice/acme", "@bob/acme")
    async with open_engine() as reopened:
        assert await reopened.workspace_folder("alice", "acme", new="x") == "@alice/acme"


async def test_a_server_key_is_the_first_one_stored_for_good(store, open_engine):
    first = await store.server_key("links", new=b"k" * 32)
    again = await store.server_key("links", new=b"x" * 32)
    other = await store.server_key("other", new=b"o" * 32)
    assert (first, again, other) == (b"k" * 32, b"k" * 32, b"o" * 32)
    async with open_engine() as reopened:
        assert await reopened.server_key("links", new=b"y" * 32) == b"k" * 32


async def test_a_turns_end_is_written_with_its_finished_or_not_at_all(store):
    await store.create_session(session(turn_id="t1", state=s.SESSION_STATE_RUNNING))
    await store.create_turn(turn(epoch=1), lease_until=time.time() + 60)
    release = SessionChange(
        update_time=time.time(), state=s.SESSION_STATE_IDLE, turn_id="", expect_turn_id="t1"
    )
    end = TurnEnd("s1", "t1", epoch=1, model_calls=3, cost_usd=0.5, first_seq=1, release=release)
    stale = TurnEnd("s1", "t1", epoch=7, model_calls=3, cost_usd=0.5, first_seq=1, release=release)
    finished = t.TurnEvent(session_id="s1", turn_id="t1", finished=t.TurnFinished())
    lost = await store.append_events([finished], fences={("s1", "t1"): 7}, writes=[stale])
    assert lost == {("s1", "t1")}, "a holder that lost the turn writes neither"
    rec = await store.get_session("s1")
    assert rec is not None and rec.turn_id == "t1" and rec.state == s.SESSION_STATE_RUNNING
    finished = t.TurnEvent(session_id="s1", turn_id="t1", finished=t.TurnFinished())
    assert await store.append_events([finished], fences={("s1", "t1"): 1}, writes=[end]) == set()
    rec = await store.get_session("s1")
    assert rec is not None and rec.turn_id == "" and rec.state == s.SESSION_STATE_IDLE
    ended = await store.get_turn("s1", "t1")
    assert ended is not None and ended.state == TurnState.FINISHED
    assert (ended.model_calls, ended.cost_usd) == (3, 0.5)


# Webhooks

ACTIVE, PAUSED, FAILING, GONE = (
    wh.WEBHOOK_STATE_ACTIVE,
    wh.WEBHOOK_STATE_PAUSED,
    wh.WEBHOOK_STATE_FAILING,
    wh.WEBHOOK_STATE_GONE,
)


def webhook(id: str = "wh1", **kw: object) -> WebhookRecord:
    base: dict[str, object] = dict(
        owner="alice",
        url="https://example.com/hook",
        events=["*"],
        labels={},
        session_id="",
        description="",
        format=wh.WEBHOOK_FORMAT_STANDARD,
        state=ACTIVE,
        state_reason="",
        server_wide=False,
        declared="",
        secret="whsec_c2VjcmV0",
        create_time=1.0,
        update_time=1.0,
    )
    base.update(kw)
    return WebhookRecord(id=id, **base)  # type: ignore[arg-type]


def delivery(id: str, session_id: str = "s1", seq: int = 1, **kw: object) -> DeliveryRecord:
    base: dict[str, object] = dict(
        webhook_id="wh1",
        message_id=f"msg_{session_id}_{seq}",
        kind="question",
        turn_id="t1",
        body=b"{}",
        state=DeliveryState.PENDING,
        tries=0,
        attempts=[],
        next_attempt=0.0,
        deadline=1e12,
        event_time=1.0,
        create_time=float(seq),
    )
    base.update(kw)
    return DeliveryRecord(id=id, session_id=session_id, seq=seq, **base)  # type: ignore[arg-type]


def kinds_of(*kinds: str, session_id: str = "s1") -> list[t.TurnEvent]:
    made = {
        "question": lambda: t.TurnEvent(question=t.Question(request_id="q", question="?")),
        "text": lambda: t.TurnEvent(text=t.Text(text="hi", partial=True)),
        "finished": lambda: t.TurnEvent(finished=t.TurnFinished(output="done")),
        "session_state": lambda: t.TurnEvent(session_state=t.SessionStateChange(state=2)),
        "notice": lambda: t.TurnEvent(notice=t.Notice(text="n")),
    }
    events = [made[kind]() for kind in kinds]
    for e in events:
        e.session_id, e.turn_id = session_id, "t1"
        e.time.FromSeconds(100)
    return events


def expand_all(taken: list[OutboxItem]):
    """An `Expand` that records what it was handed and makes one delivery per item, for
    every webhook."""

    def expand(items, hooks, now):
        taken.extend(items)
        return [
            delivery(f"d-{hook.id}-{i.session_id}-{i.seq}", i.session_id, i.seq, kind=i.kind,
                     webhook_id=hook.id, create_time=now)
            for i in items
            for hook in hooks
        ]  # fmt: skip

    return expand


async def test_webhooks_are_kept_listed_by_owner_changed_and_deleted_with_deliveries(store):
    await store.add_webhook(webhook("wh1", labels={"team": "docs"}, events=["question"]))
    await store.add_webhook(webhook("wh2", owner="bob", create_time=2.0, server_wide=True))
    got = await store.get_webhook("wh1")
    assert got == webhook("wh1", labels={"team": "docs"}, events=["question"])
    assert [w.id for w in await store.list_webhooks("alice")] == ["wh1"]
    assert [w.id for w in await store.list_webhooks()] == ["wh1", "wh2"]
    assert await store.get_webhook("nope") is None
    changed = replace(got, url="https://example.org/", state=PAUSED, state_reason="paused",
                      previous_secret="whsec_b2xk", previous_until=9.0, failures=3,
                      update_time=5.0, owner="mallory", server_wide=True)  # fmt: skip
    assert await store.update_webhook(changed)
    again = await store.get_webhook("wh1")
    assert again is not None and (again.url, again.state, again.failures) == (
        "https://example.org/",
        PAUSED,
        3,
    )
    assert (again.owner, again.server_wide) == ("alice", False), "whose it is never changes"
    assert not await store.update_webhook(webhook("nope"))
    await store.add_delivery(delivery("d1"))
    assert await store.delete_webhook("wh1")
    assert await store.get_webhook("wh1") is None and await store.get_delivery("d1") is None
    assert not await store.delete_webhook("wh1")


async def test_declared_webhooks_are_what_the_configuration_says(store):
    await store.add_webhook(webhook("wh_mine"))
    first = [webhook("wh_config_a", owner="", declared="a"), webhook("wh_config_b", declared="b")]
    await store.declare_webhooks(first)
    hook = await store.get_webhook("wh_config_a")
    assert hook is not None
    hook.state, hook.failures = FAILING, 7
    assert await store.update_webhook(hook)
    await store.add_delivery(delivery("db", webhook_id="wh_config_b"))
    await store.declare_webhooks([webhook("wh_config_a", owner="", declared="a", url="https://x/")])
    after = {w.id: w for w in await store.list_webhooks()}
    assert set(after) == {"wh_mine", "wh_config_a"}, "b is no longer declared; mine stays"
    kept = after["wh_config_a"]
    assert (kept.url, kept.state, kept.failures) == ("https://x/", FAILING, 7)
    assert await store.get_delivery("db") is None, "gone with its webhook"


async def test_stored_events_a_webhook_may_hear_of_go_to_the_outbox_with_them(store):
    await store.create_session(session(owner="alice", labels={"team": "docs"}, title="docs"))
    await store.add_webhook(webhook())
    batch = kinds_of("text", "question", "notice", "session_state", "finished")
    await store.append_events(batch)
    taken: list[OutboxItem] = []
    assert await store.expand_outbox(100, expand_all(taken), now=200.0) == Expanded(3, 3, True)
    assert [(i.kind, i.seq) for i in taken] == [("question", 2), ("session_state", 4),
                                                ("finished", 5)]  # fmt: skip
    question = taken[0]
    assert t.TurnEvent.FromString(question.event or b"") == batch[1]
    assert (question.owner, question.labels, question.time) == ("alice", {"team": "docs"}, 100.0)
    assert question.title == "docs"
    again = await store.expand_outbox(100, expand_all(taken), now=200.0)
    assert again == Expanded(0, 0, True), "taken once"
    made = await store.get_delivery("d-wh1-s1-2")
    assert made is not None and made.kind == "question" and made.create_time == 200.0
    stats = await store.outbox_stats()
    assert (stats.events, stats.pending, stats.oldest_pending) == (0, 3, 1.0)


async def test_an_event_that_is_not_stored_leaves_nothing_in_the_outbox(store):
    await store.add_webhook(webhook())
    await store.create_turn(turn(owner="r1", epoch=2), lease_until=10.0)
    lost = await store.append_events(kinds_of("question"), fences={("s1", "t1"): 1})
    assert lost == {("s1", "t1")}
    assert (await store.outbox_stats()).events == 0


async def test_without_webhooks_a_webhook_made_now_still_hears_of_what_it_may_want(store):
    """No webhook: what none can want goes (the outbox's rows, or what SQLite holds back
    in their place); a webhook made now still gets the events stamped since a moment
    before (clocks agree within that), and then every new one."""
    await store.create_session(session())
    await store.append_events(kinds_of("question", "finished"))
    events = kinds_of("question")
    events[0].time.FromSeconds(1000)
    await store.append_events(events)
    taken: list[OutboxItem] = []
    first = await store.expand_outbox(100, expand_all(taken), now=1000.5)
    assert taken == [] and not first.webhooks and first.made == 0, "no webhook: none made"
    await store.add_webhook(webhook(create_time=999.0))
    assert await store.expand_outbox(100, expand_all(taken), now=1001.0) == Expanded(1, 1, True)
    assert [(i.kind, i.seq, i.time) for i in taken] == [("question", 3, 1000.0)]
    later = kinds_of("finished")
    later[0].time.FromSeconds(1002)
    await store.append_events(later)
    assert await store.expand_outbox(100, expand_all(taken), now=1003.0) == Expanded(1, 1, True)
    assert await store.delete_webhook("wh1")
    await store.append_events(kinds_of("question"))
    last = await store.expand_outbox(100, expand_all(taken), now=1004.0)
    assert not last.webhooks and last.made == 0, "deleted: none made again"


async def test_a_declared_webhook_hears_of_what_came_a_moment_before_it(store):
    await store.create_session(session())
    events = kinds_of("question")
    events[0].time.FromSeconds(1000)
    await store.append_events(events)
    await store.declare_webhooks([webhook("wh_config", declared="a", create_time=999.0)])
    taken: list[OutboxItem] = []
    assert await store.expand_outbox(100, expand_all(taken), now=1001.0) == Expanded(1, 1, True)


async def test_a_deleted_sessions_outbox_rows_go_with_it(store):
    await store.create_session(session())
    await store.append_events(kinds_of("question"))
    assert await store.delete_session("s1")
    assert (await store.outbox_stats()).events == 0


async def test_two_expanders_at_once_take_each_row_once(open_engine, store):
    await store.add_webhook(webhook())
    for n in range(20):
        await store.append_events(kinds_of("question", session_id=f"s{n}"))
    taken: list[OutboxItem] = []
    async with open_engine() as other:
        done = await asyncio.gather(
            *(s.expand_outbox(3, expand_all(taken), now=200.0) for s in [store, other] * 5)
        )
    assert sum(d.taken for d in done) == 20 and len(taken) == 20
    assert len({i.id for i in taken}) == 20, "no row expanded twice"


async def test_deliveries_are_claimed_one_at_a_time_per_webhook_and_session(store):
    await store.add_webhook(webhook("wh1"))
    await store.add_webhook(webhook("wh2"))
    for rec in [delivery("a1", "s1", 1), delivery("a2", "s1", 2), delivery("b1", "s2", 1),
                delivery("c1", "s1", 1, webhook_id="wh2"), delivery("late", "s3", 1,
                next_attempt=50.0)]:  # fmt: skip
        await store.add_delivery(rec)
    got = await store.claim_deliveries("r1", now=10.0, lease_until=20.0, limit=10)
    assert sorted(d.id for d in got) == ["a1", "b1", "c1"], "a2 waits for a1; late is not due"
    assert all(d.lease_owner == "r1" and d.lease_until == 20.0 for d in got)
    assert await store.claim_deliveries("r2", now=10.0, lease_until=20.0, limit=10) == []
    attempt = AttemptRecord(1, 10.0, 200, 0.01)
    done = AttemptOutcome(state=DeliveryState.DELIVERED, webhook="success", now=10.0)
    a1 = next(d for d in got if d.id == "a1")
    assert await store.record_attempt(a1, attempt, owner="r1", outcome=done) == Recorded(True)
    [a2] = await store.claim_deliveries("r2", now=11.0, lease_until=21.0, limit=10)
    assert a2.id == "a2", "the next of s1 goes once a1 is delivered"
    # A holder that dies: its lease ends and another takes its deliveries.
    again = await store.claim_deliveries("r3", now=25.0, lease_until=40.0, limit=10)
    assert sorted(d.id for d in again) == ["a2", "b1", "c1"]
    assert not (await store.record_attempt(a2, attempt, owner="r2", outcome=done)).written
    await store.release_deliveries("r3", ["b1", "c1"])
    skipped = await store.claim_deliveries("r4", now=26.0, lease_until=40.0, limit=10,
                                           skip=["wh2"])  # fmt: skip
    assert [d.id for d in skipped] == ["b1"], "wh2 is skipped"
    paused = await store.get_webhook("wh2")
    assert paused is not None
    paused.state = PAUSED
    await store.update_webhook(paused)
    await store.release_all_deliveries()
    rest = await store.claim_deliveries("r5", now=60.0, lease_until=70.0, limit=10)
    assert sorted(d.id for d in rest) == ["a2", "b1", "late"], "a paused webhook's wait"


async def test_claims_go_round_robin_across_principals_as_told(store):
    """Alice's backlog is due first, yet each principal's first goes before her second;
    the operator's declared webhooks are a principal of their own."""
    await store.add_webhook(webhook("wh_a", owner="alice"))
    await store.add_webhook(webhook("wh_b", owner="bob"))
    await store.add_webhook(webhook("wh_d", owner="alice", declared="ops", server_wide=True))
    backlog = [delivery(f"a{n}", f"s{n}", 1, webhook_id="wh_a", next_attempt=float(n))
               for n in range(1, 6)]  # fmt: skip
    for rec in [*backlog, delivery("d1", "s1", 1, webhook_id="wh_d", next_attempt=8.0),
                delivery("b1", "s9", 1, webhook_id="wh_b", next_attempt=9.0)]:  # fmt: skip
        await store.add_delivery(rec)

    async def claim(limit: int, fair: Fairness | None = None) -> dict[str, str]:
        got = await store.claim_deliveries("r1", now=10.0, lease_until=20.0, limit=limit, fair=fair)
        await store.release_deliveries("r1", [d.id for d in got])
        return {d.id: d.principal for d in got}

    assert await claim(3) == {"a1": "alice", "d1": DECLARED, "b1": "bob"}
    assert await claim(10, Fairness(each=2)) == {"a1": "alice", "a2": "alice", "d1": DECLARED,
                                                 "b1": "bob"}  # fmt: skip
    assert await claim(10, Fairness(skip=("alice",))) == {"d1": DECLARED, "b1": "bob"}
    last = await claim(2, Fairness(busy=("alice",)))
    assert last == {"d1": DECLARED, "b1": "bob"}, "the busy last"


async def test_an_earlier_event_still_in_the_outbox_holds_back_a_delivery(store):
    await store.add_webhook(webhook())
    await store.append_events(kinds_of("question"))  # s1, seq 1: in the outbox
    await store.add_delivery(delivery("d2", "s1", 2))
    assert await store.claim_deliveries("r1", now=10.0, lease_until=20.0, limit=10) == []
    await store.expand_outbox(10, lambda items, hooks, now: [], now=200.0)
    [got] = await store.claim_deliveries("r1", now=10.0, lease_until=20.0, limit=10)
    assert got.id == "d2"


async def test_two_claimers_at_once_never_take_the_same_delivery(open_engine, store):
    await store.add_webhook(webhook())
    for n in range(30):
        await store.add_delivery(delivery(f"d{n}", f"s{n}", 1))
    ids: list[str] = []
    async with open_engine() as other:
        # A claimer skips the rows another has locked as candidates and not taken, so
        # one round at once may leave a few for the next: none is ever taken twice.
        for _ in range(5):
            batches = await asyncio.gather(
                *(
                    s.claim_deliveries(f"r{i}", now=10.0, lease_until=20.0, limit=4)
                    for i, s in enumerate([store, other] * 6)
                )
            )
            ids += [d.id for batch in batches for d in batch]
            if len(set(ids)) == 30:
                break
    assert len(ids) == len(set(ids)) == 30


async def test_failed_attempts_in_a_row_stop_a_webhook_once(store):
    await store.add_webhook(webhook())
    await store.add_delivery(delivery("d1"))
    reason = "3 failed attempts in a row"
    failed = AttemptOutcome(
        state=DeliveryState.PENDING, webhook="failure", pause_after=3, reason=reason, now=9.0
    )
    stopped = []
    for n in range(1, 5):
        [held] = await store.claim_deliveries("r1", now=10.0 * n, lease_until=10.0 * n + 5, limit=1)
        if n == 4:
            break
        recorded = await store.record_attempt(
            held, AttemptRecord(n, 1.0 * n, 500, 0.1, response="boom"), owner="r1", outcome=failed
        )
        stopped.append(recorded.stopped)
        hook = await store.get_webhook("wh1")
        assert hook is not None and hook.failures == n
        if n < 3:
            continue
        hook.state = ACTIVE  # resumed, as UpdateWebhook does
        hook.failures = 0
        await store.update_webhook(hook)
    assert stopped[:2] == [None, None] and stopped[2] is not None
    assert (stopped[2].state, stopped[2].state_reason) == (FAILING, "3 failed attempts in a row")
    assert [a.number for a in held.attempts] == [1, 2, 3] and held.tries == 3
    assert held.attempts[-1] == AttemptRecord(3, 3.0, 500, 0.1, response="boom")
    gone = AttemptOutcome(state=DeliveryState.FAILED, webhook="gone", reason="410", now=50.0)
    recorded = await store.record_attempt(
        held, AttemptRecord(4, 4.0, 410, 0.1), owner="r1", outcome=gone
    )
    assert recorded.stopped is not None and recorded.stopped.state == GONE
    after = await store.get_delivery("d1")
    assert after is not None and after.state == DeliveryState.FAILED and after.lease_owner == ""
    success = AttemptOutcome(state=DeliveryState.DELIVERED, webhook="success", now=60.0)
    await store.add_delivery(delivery("d2", seq=2))
    hook = await store.get_webhook("wh1")
    assert hook is not None
    await store.update_webhook(replace(hook, state=ACTIVE))
    [d2] = await store.claim_deliveries("r1", now=70.0, lease_until=80.0, limit=1)
    await store.record_attempt(d2, AttemptRecord(1, 70.0, 204, 0.1), owner="r1", outcome=success)
    hook = await store.get_webhook("wh1")
    assert hook is not None and hook.failures == 0, "a delivered attempt resets the count"


async def test_deliveries_are_redelivered_given_up_pruned_and_listed(store):
    await store.add_webhook(webhook())
    for n in range(1, 6):
        await store.add_delivery(delivery(f"d{n}", "s1" if n < 4 else "s2", n, deadline=50.0))
    done = AttemptOutcome(state=DeliveryState.DELIVERED, webhook="success", now=10.0)
    [d1, d4] = await store.claim_deliveries("r1", now=10.0, lease_until=20.0, limit=10)
    await store.record_attempt(d1, AttemptRecord(1, 10.0, 200, 0.1), owner="r1", outcome=done)
    await store.release_deliveries("r1", [d4.id])
    page = await store.list_deliveries(DeliveryPage(webhook_id="wh1", limit=2))
    assert [d.id for d in page] == ["d5", "d4"], "newest first"
    rest = await store.list_deliveries(
        DeliveryPage(webhook_id="wh1", limit=10, before=(page[-1].create_time, page[-1].id))
    )
    assert [d.id for d in rest] == ["d3", "d2", "d1"]
    assert await store.pending_sessions("wh1", limit=10) == ["s1", "s2"]
    assert await store.redeliver("d1", now=30.0, deadline=90.0)
    d1_again = await store.get_delivery("d1")
    assert d1_again is not None and d1_again.state == DeliveryState.PENDING
    assert (d1_again.next_attempt, d1_again.deadline, d1_again.tries) == (30.0, 90.0, 1)
    assert not await store.redeliver("nope", now=30.0, deadline=90.0)
    assert await store.expire_deliveries(100.0) == 5, "all past their deadline (d1's: 90)"
    assert await store.pending_sessions("wh1", limit=10) == []
    assert await store.prune_deliveries(before=3.5) == 3, "made before 3.5: d1, d2, d3"
    assert [d.id for d in await store.list_deliveries(DeliveryPage(webhook_id="wh1", limit=9))] == [
        "d5",
        "d4",
    ]
