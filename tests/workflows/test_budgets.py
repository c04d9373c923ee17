"""A run's `limits.max_cost_usd` caps every step together: one turn, one set of counters."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.fake_provider import KEY, FakeProvider, openai_text
from support.in_process import in_process
from workflows.conftest import write_workflow
from workflows.runs import flows, run_workflow

pytestmark = pytest.mark.engines("sqlite", "postgres")

PRICED = """\
workflow: priced
limits: {max_cost_usd: 0.01}
steps:
  - {id: a, type: prompt, prompt: "first"}
  - {id: b, type: prompt, prompt: "second"}
  - {id: c, type: prompt, prompt: "third"}
"""


async def test_the_cost_cap_of_a_run_is_summed_across_its_steps(
    settings, shared_dir, fake: FakeProvider
):
    # gpt-4.1 costs $2 per million input tokens: each call about $0.006, under the cap
    # alone, over it together.
    fake.script(
        openai_text("one", model="gpt-4.1", usage=(3_000, 0, 0)),
        openai_text("two", model="gpt-4.1", usage=(3_000, 0, 0)),
        openai_text("never sent", model="gpt-4.1"),
    )
    write_workflow(shared_dir, "priced", PRICED)
    opened = replace(settings, openai_api_key=KEY, openai_base_url=fake.url + "/v1")
    async with in_process(opened) as wire:
        session = await wire.create_session(model="openai:gpt-4.1")
        events = await run_workflow(wire, session.id, "priced")
    finished = events[-1].finished
    assert (finished.error.reason, finished.error.metadata["step"]) == ("BUDGET_EXCEEDED", "c")
    assert flows(events) == [
        ("a", "started"),
        ("a", "succeeded"),
        ("b", "started"),
        ("b", "succeeded"),
        ("c", "started"),
        ("c", "failed"),
    ]
    assert len(fake.requests) == 2, "the call past the cap is never made"
    assert finished.after.cost_usd >= 0.01
