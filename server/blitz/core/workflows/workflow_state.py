"""A workflow run's state and events: what a `/run` turn stores and sends for each step.

`RunState` (each nested workflow's `Frame`: its current step, attempt and finished steps'
outputs, and the resolved definitions) is what the store's `workflow_runs` keeps, written
with every `flow_step` in the same transaction; `flow_event` makes that `flow_step`, with
the step in the envelope. workflow_runs.py carries a run out; this is what it records.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from blitz.errors import BlitzError, invalid_argument
from blitz.v1 import turn_pb2 as t
from blitz.workflows import Workflow
from blitz.workflows.definitions import Step

__all__ = ["EVENT_OUTPUT", "Frame", "RunState", "cap", "flow_event", "parse_run"]

# A step's output as its `flow_step` carries it (at most).
EVENT_OUTPUT = 4 * 1024


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
    # A command step's part ("run", then "check" for its `until`), and checks made; a
    # plan approval's ("ask", then "feedback" after a rejection).
    part: str = ""
    tries: int = 0
    kept: str = ""
    # The current step waits on requests (its `waiting` was sent); an approval step's
    # question, by request id.
    waiting: bool = False
    asked: str = ""
    # Finished steps: id → {"output", "status"}.
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    # A plan step's rejection feedback, by its id, and how often it was rejected.
    feedback: dict[str, str] = field(default_factory=dict)
    rejections: int = 0
    child: Frame | None = None

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
    status: str,
    output: str = "",
    error: BlitzError | None = None,
) -> t.TurnEvent:
    """The `flow_step` of `frame`'s current step, with the step in its envelope."""
    return t.TurnEvent(
        flow_step=t.FlowStep(
            workflow=workflow.label,
            id=step.id,
            title=step.title,
            type=step.type,
            index=frame.index + 1,
            count=len(workflow.steps),
            status=status,
            output=cap(output, EVENT_OUTPUT),
            error=error.reason.wire if error is not None else "",
            run=frame.run,
        ),
        step=t.FlowStepRef(run=frame.run, id=step.id, index=frame.index + 1),
    )
