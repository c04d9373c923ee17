"""The step loop's tables: an executor for every step type, and the statuses the clients
and the docs know."""

from __future__ import annotations

import re
from pathlib import Path

from blitz.core.workflows.steps import executors
from blitz.core.workflows.workflow_state import StepStatus
from blitz.workflows.definitions import STEP_TYPES

DOCS = Path(__file__).parents[2] / "docs" / "workflows.md"


async def _nested(frame, results):  # never called: the table is only looked at
    raise AssertionError


def test_every_step_type_has_an_executor() -> None:
    assert sorted(executors(_nested)) == sorted(STEP_TYPES)


def test_the_step_statuses_are_those_the_docs_list() -> None:
    """A status's value is a wire value (FlowStep.status, `steps.ID.status`)."""
    row = next(line for line in DOCS.read_text().splitlines() if line.startswith("| `status` |"))
    documented = re.findall(r"`(\w+)`", row.partition("| `status` |")[2])
    assert sorted(documented) == sorted(status.value for status in StepStatus)
