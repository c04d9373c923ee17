"""The store's contract: what every engine must do, run against each engine in `ENGINES`.

One test per operation of `blitz.store.Store`, named for the behaviour the core relies on.
An engine joins by adding its name to `ENGINES` and a branch to `open_engine`. PostgreSQL
runs on a throwaway cluster of the system's `postgresql` package (one per test run, a
fresh database per test); where there is none, its tests are skipped, saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from blitz.store import (
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    Store,
    TurnRecord,
    TurnState,
    UsageTotals,
    open_store,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

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


# Turns


async def test_a_turn_reads_back_and_its_update_writes_every_mutable_field(store):
    made = turn(deadline=5.0, usage_before=b"u")
    await store.create_turn(made)
    assert await store.get_turn("s1", "t1") == made
    made.state, made.first_seq, made.model_calls, made.cost_usd = TurnState.PARKED, 3, 2, 0.5
    made.steer, made.history = ["a", "b"], b"history"
    assert await store.update_turn(made)
    assert await store.get_turn("s1", "t1") == made
    assert await store.get_turn("s1", "nope") is None


async def test_a_turn_moves_only_from_the_state_expected(store):
    await store.create_turn(turn(state=TurnState.PARKED))
    rec = turn(state=TurnState.RUNNING)
    results = await asyncio.gather(
        *(store.update_turn(rec, expect=TurnState.PARKED) for _ in range(5))
    )
    assert sorted(results) == [False] * 4 + [True], "one resumer wins"
    assert [r.turn_id for r in await store.turns_in_state(TurnState.RUNNING)] == ["t1"]
    assert await store.turns_in_state(TurnState.PARKED) == []


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
        last_prompt=9,
    )


# Approval rules


async def test_rules_apply_to_their_session_or_their_caller_and_workspace(store):
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

    mine = rule("a", s.RULE_SCOPE_SESSION)
    always = rule("bb", s.RULE_SCOPE_ALWAYS, session_id="s0")
    for r in (
        mine,
        always,
        rule("ccc", s.RULE_SCOPE_SESSION, session_id="s2"),
        rule("dddd", s.RULE_SCOPE_ALWAYS, caller="bob"),
        rule("eeeee", s.RULE_SCOPE_ALWAYS, workspace="other"),
    ):
        await store.add_rule(r)
    assert await store.rules_for(session_id="s1", workspace="w", caller="alice") == [mine, always]
    assert await store.delete_rule("a")
    assert not await store.delete_rule("a")
    assert await store.rules_for(session_id="s1", workspace="w", caller="alice") == [always]


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


async def test_appends_are_announced_a_batch_at_a_time_where_processes_share_the_store(
    request: pytest.FixtureRequest, open_engine: Opener
):
    if "sqlite" in request.node.name:
        pytest.skip("one process owns a SQLite file: it announces nothing")
    async with open_engine() as store, open_engine() as other:
        changes = aiter(other.changes())
        assert await asyncio.wait_for(anext(changes), 10) == {}, "it listens"
        await store.append_events([event("s1"), event("s2"), event("s1")])
        announced = await asyncio.wait_for(anext(changes), 10)
        await changes.aclose()  # type: ignore[attr-defined]
    assert announced == {"s1": 2, "s2": 1}, "ids and seqs, one notice for the batch"
