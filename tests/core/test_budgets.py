"""A turn's limits, checked by the core before every model call: calls and cost."""

from __future__ import annotations

import pytest
from support.fake_provider import KEY, FakeProvider, openai_text, openai_tool_call
from support.in_process import OpenCore

from blitz.v1 import session_pb2 as s

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")


async def test_a_turn_that_reaches_its_cost_cap_ends_with_budget_exceeded(
    opened: OpenCore, fake: FakeProvider
):
    # gpt-4.1 has a known price, so each call costs something; the first spends the cap.
    fake.script(
        openai_tool_call("list_files", {"path": "."}, model="gpt-4.1", usage=(200_000, 1_000, 0)),
        openai_text("never sent", model="gpt-4.1"),
    )
    async with opened(openai_api_key=KEY, openai_base_url=fake.url + "/v1") as client:
        session = await client.create_session(model="openai:gpt-4.1")
        events = await client.run_all(session.id, "look around", max_cost_usd=0.01)
        report = await client.call("GetUsage", s.GetUsageRequest(session_id=session.id))

    finished = events[-1].finished
    assert finished.error.reason == "BUDGET_EXCEEDED"
    assert finished.error.metadata["max_cost_usd"] == "0.01"
    assert float(finished.error.metadata["cost_usd"]) >= 0.01
    assert len(fake.requests) == 1, "the call past the cap is never made"
    (entry,) = report.entries
    assert entry.priced and entry.cost_usd == pytest.approx(finished.after.cost_usd)
    assert finished.after.calls == 1


async def test_a_turn_under_its_cost_cap_runs_to_its_answer(opened: OpenCore, fake: FakeProvider):
    fake.script(
        openai_tool_call("list_files", {"path": "."}, model="gpt-4.1", usage=(100, 10, 0)),
        openai_text("all done", model="gpt-4.1", usage=(120, 5, 0)),
    )
    async with opened(openai_api_key=KEY, openai_base_url=fake.url + "/v1") as client:
        session = await client.create_session(model="openai:gpt-4.1")
        events = await client.run_all(session.id, "look around", max_cost_usd=1.0)

    finished = events[-1].finished
    assert not finished.HasField("error") and finished.output == "all done"
    assert finished.after.calls == 2 and 0 < finished.after.cost_usd < 1.0


async def test_max_turns_counts_every_model_call_of_the_turn(opened: OpenCore):
    async with opened() as client:
        session = await client.create_session()
        # Two tool directives: three model calls in all; two are allowed.
        events = await client.run_all(session.id, "ls\nread nothing.txt", max_turns=2)

    error = events[-1].finished.error
    assert (error.reason, error.metadata["max_turns"]) == ("MAX_TURNS", "2")
    assert events[-1].finished.after.calls == 2
