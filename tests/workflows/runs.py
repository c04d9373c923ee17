"""Helpers of the run tests: start a workflow run and answer what it asks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from support.wire import Wire

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f

Answers = Callable[[t.TurnEvent], str | None]


async def run_workflow(
    wire: Wire,
    session_id: str,
    name: str,
    params: Mapping[str, str] | None = None,
    *,
    approve: bool = True,
    answer: Answers | None = None,
    **turn: Any,
) -> list[t.TurnEvent]:
    """RunWorkflow to its end: each approval decided (once, or denied), each question
    answered with `answer(event)`."""
    request = f.RunWorkflowRequest(
        session_id=session_id, name=name, params=dict(params or {}), turn=t.Turn(**turn)
    )
    events = []
    async for event in wire.stream("RunWorkflow", request):
        events.append(event)
        if event.HasField("approval_request"):
            decision = t.DECISION_ONCE if approve else t.DECISION_DENY
            await wire.decide(session_id, event, decision)
        elif event.HasField("question"):
            assert answer is not None, f"unexpected question: {event.question.question}"
            given = answer(event)
            assert given is not None
            await wire.call(
                "Answer",
                s.AnswerRequest(
                    session_id=session_id, request_id=event.question.request_id, answers=[given]
                ),
            )
    return events


def flows(events: list[t.TurnEvent], *, waiting: bool = True) -> list[tuple[str, str]]:
    """Each flow_step as (step id, status); without `waiting`, those left out (a command
    step waits on its approval each time it runs)."""
    return [
        (e.flow_step.id, e.flow_step.status)
        for e in events
        if e.HasField("flow_step") and (waiting or e.flow_step.status != "waiting")
    ]
