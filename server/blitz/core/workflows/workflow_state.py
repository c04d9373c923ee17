"""A workflow run's state and events: what a `/run` turn stores and sends for each step.

`RunState` (each nested workflow's `Frame`: its current step, attempt and finished steps'
outputs, and the resolved definitions) is what the store's `workflow_runs` keeps, written
with every `flow_step` in the same transaction; `flow_event` makes that `flow_step`, with
the step in the envelope, its status a `StepStatus`. workflow_runs.py carries a run out;
this is what it records.

The statuses' values are wire values: `FlowStep.status`, a finished step's `status` in the
stored state and in templates (`steps.ID.status`), and the clients' marks
(clients/blitz_cli/lines.py, console/src/format.ts) all read them. Never rename one.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from blitz.errors import BlitzError, invalid_argument
from blitz.v1 import turn_pb2 as t
from blitz.workflows import Workflow
from blitz.workflows.definitions import Step

__all__ = ["EVENT_OUTPUT", "Frame", "RunState", "StepStatus", "cap", "flow_event", "parse_run"]

# A step's output as its `flow_step` carries it (at most).
EVENT_OUTPUT = 4 * 1024


class StepStatus(StrEnum):
    """Where a step is, as its `flow_step` says it (docs/workflows.md, "Events"); the last
    three are also what a finished step keeps in the run's state."""

    STARTED = "started"
    # Parked on requests (an approval or a question).
    WAITING = "waiting"
    # It failed and is tried again (after the retry's wait, or the `until` check's).
    RETRYING = "retrying"
    # Ended by a cancel, a deadline or the server stopping.
    CANCELLED = "cancelled"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


def parse_run(arg: str) -> tuple[str, dict[str, str]]:
    """`NAME key=value …` (shell quoting) into the name and the params as text."""
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise invalid_argument("turn.text", f"/run: {exc}") from None
    if not words:
        raise invalid_argument("turn.text", "/run needs a workflow's name: /run NAME key=value")
    params: dict[str, str] = {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise invalid_argument("turn.text", f"/run: {word!r} is not key=value")
        params[key] = value
    return words[0], params


@dataclass
class Frame:
    """One workflow's progress: the run's, or a sub-workflow's inside a step of it."""

    name: str
    run: str
    params: dict[str, Any]
    # The current step (0-based) and its attempt (0: not started yet).
    index: int = 0
    attempt: int = 0
    # When the attempt is due (wall clock, seconds since the epoch), while it waits out its
    # retry's backoff; 0 once it has begun. Stored, so a run taken over by another process
    # waits only what is left of the wait (`step_loop.py`).
    due: float = 0.0
    # A command step's part ("run", then "check" for its `until`), and checks made; a
    # plan approval's ("ask", then "feedback" after a rejection).
    part: str = ""
    tries: int = 0
    kept: str = ""
    # The current step waits on requests (its `waiting` was sent); an approval step's
    # question, by request id.
    waiting: bool = False
    asked: str = ""
    # Finished steps: id → {"output", "status"} (a StepStatus's value).
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    # A plan step's rejection feedback, by its id, and how often it was rejected.
    feedback: dict[str, str] = field(default_factory=dict)
    rejections: int = 0
    child: Frame | None = None

    def finish(self, step_id: str, status: StepStatus, output: str = "") -> None:
        """Keep a finished step's output and status (for templates and the run's output)."""
        self.steps[step_id] = {"output": output, "status": status.value}

    def status_of(self, step_id: str) -> StepStatus | None:
        """A finished step's status; None for one that has not finished."""
        kept = self.steps.get(step_id)
        return StepStatus(kept["status"]) if kept is not None else None

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> Frame:
        child = data.get("child")
        fields = {k: v for k, v in data.items() if k != "child"}
        return cls(**fields, child=cls.load(child) if child else None)


@dataclass
class RunState:
    """What a run's turn stores with each `flow_step` (the store's `workflow_runs`)."""

    definitions: dict[str, Any]
    root: Frame
    # The requests asked before the current attempt began: a resume is handed every
    # resolution of the turn, and each attempt's work sees only its own.
    seen: list[str] = field(default_factory=list)

    def dump(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def load(cls, data: bytes) -> RunState:
        raw = json.loads(data)
        return cls(
            definitions=raw["definitions"], root=Frame.load(raw["root"]), seen=raw.get("seen", [])
        )


def cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def flow_event(
    workflow: Workflow,
    frame: Frame,
    step: Step,
    status: StepStatus,
    output: str = "",
    error: BlitzError | None = None,
    *,
    index: int | None = None,
) -> t.TurnEvent:
    """The `flow_step` of `frame`'s current step (or of its step at `index`, 0-based),
    with the step in its envelope."""
    position = (frame.index if index is None else index) + 1
    return t.TurnEvent(
        flow_step=t.FlowStep(
            workflow=workflow.label,
            id=step.id,
            title=step.title,
            type=step.type,
            index=position,
            count=len(workflow.steps),
            status=status.value,
            output=cap(output, EVENT_OUTPUT),
            error=error.reason.wire if error is not None else "",
            run=frame.run,
        ),
        step=t.FlowStepRef(run=frame.run, id=step.id, index=position),
    )
