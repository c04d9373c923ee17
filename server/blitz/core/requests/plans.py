"""A session's plan: the one a plan-mode turn proposed, or the feedback of its rejection.

Stored on the session (`SessionRecord.plan`, JSON) until the next turn: a proposal is
`{"id", "tasks", "output"}`, its id being the proposing turn's; a rejection is
`{"id", "rejected": true, "feedback"}`. A turn that accepts the proposal gets it in its
prompt; the turn after a rejection gets the feedback. Any new turn supersedes either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from blitz.errors import BlitzError, Reason
from blitz.v1 import turn_pb2 as t

__all__ = ["StoredPlan", "proposal", "proposed_event", "read_plan", "rejection"]


@dataclass(frozen=True)
class StoredPlan:
    plan_id: str
    tasks: tuple[str, ...] = ()
    output: str = ""
    rejected: bool = False
    feedback: str = ""

    @property
    def open(self) -> bool:
        """A proposal waiting for AcceptPlan or RejectPlan."""
        return not self.rejected

    def accepted_prompt(self) -> str:
        """What the turn that carries the plan out tells the model first."""
        tasks = "\n".join(f"- {item}" for item in self.tasks)
        plan = f"Proposed plan:\n{tasks}\n\n{self.output}".strip()
        return f"The user accepted the plan you proposed. Carry it out now.\n\n{plan}"

    def rejected_prompt(self) -> str:
        """What the turn after a rejection tells the model first."""
        why = f" Their feedback: {self.feedback}" if self.feedback else ""
        return f"The user rejected the plan you proposed.{why}"


def proposal(plan_id: str, tasks: t.Tasks | None, output: str) -> bytes:
    """A proposed plan as stored: its id, its task list and its text."""
    items = [item.content for item in tasks.items] if tasks else []
    return json.dumps({"id": plan_id, "tasks": items, "output": output}).encode()


def rejection(plan_id: str, feedback: str) -> bytes:
    return json.dumps({"id": plan_id, "rejected": True, "feedback": feedback}).encode()


def read_plan(stored: bytes | None) -> StoredPlan | None:
    """The session's stored plan, if any ("" and None: none)."""
    if not stored:
        return None
    body = json.loads(stored)
    return StoredPlan(
        plan_id=body.get("id", ""),
        tasks=tuple(body.get("tasks", ())),
        output=body.get("output", ""),
        rejected=bool(body.get("rejected", False)),
        feedback=body.get("feedback", ""),
    )


def proposed_event(plan_id: str, tasks: t.Tasks | None, output: str) -> t.TurnEvent:
    items = list(tasks.items) if tasks else []
    return t.TurnEvent(plan_proposed=t.PlanProposed(plan_id=plan_id, plan=output, tasks=items))


def no_plan(plan_id: str) -> BlitzError:
    """NO_PENDING_PLAN for a plan that is not the session's open proposal."""
    return BlitzError(
        Reason.NO_PENDING_PLAN,
        "that plan is not the session's open proposal (a later turn superseded it, or it "
        "was decided)",
        {"plan_id": plan_id},
    )


def open_plan(stored: bytes | None, plan_id: str) -> None:
    """NO_PENDING_PLAN unless `plan_id` is the open proposal of a session's `stored` plan."""
    plan = read_plan(stored)
    if plan is None or not plan.open or plan.plan_id != plan_id:
        raise no_plan(plan_id)
