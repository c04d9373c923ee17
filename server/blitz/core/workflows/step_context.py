"""What a step's executor is handed, and the one interface every executor implements.

A workflow run carries out each step with the executor of its type (`steps/`): prompt,
command, approval, sub-workflow. An executor holds no state of its own between steps and
reaches nothing but what it is handed: `StepContext`, built by `WorkflowRuns` for one
advance of one run (the store, the event log, the agent port, the turn and its IO, the
workspace, the template budget, the run's state and definitions), the frame and the step it
runs, and the resolutions of what it parked on. Its result is the step's output, the
requests it parked on (`Parked`), or an exception: `Again` (the step is not over), a
`BlitzError` (the step failed; retried as its `retry` allows).

The context's operations are the ones every executor shares: `flow` (a `flow_step` written
with the run's state in one transaction), `save` (the state alone), `forget_asked`, and
templates rendered off the event loop within the budget. It never decides what a step
does, nor when a run retries: that is the step loop's (`step_loop.py`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from blitz.core.active_turn import ActiveTurn
from blitz.core.events.event_log import EventLog
from blitz.core.workflows.workflow_state import Frame, RunState, StepStatus, flow_event
from blitz.errors import BlitzError, Reason
from blitz.ports import AgentPort, Parked, Resolution, TurnIO
from blitz.store import FlowWrite, Store
from blitz.workflows import (
    BudgetExceeded,
    TemplateBudget,
    TemplateRefused,
    Workflow,
    condition_off_loop,
    render_off_loop,
)
from blitz.workflows.definitions import Step

__all__ = [
    "KEPT_OUTPUT",
    "Again",
    "FileOf",
    "Results",
    "RunFrame",
    "StepContext",
    "StepExecutor",
    "failed",
    "new_run",
]

# A step's output as the run's state keeps it (its `flow_step` carries less: EVENT_OUTPUT).
KEPT_OUTPUT = 64 * 1024

# What a resumed step is handed: every request's resolution by id (None on a first go).
Results = dict[str, Resolution] | None
# Runs a frame's steps from its current one (the step loop's; a sub-workflow step's child).
RunFrame = Callable[[Frame, Results], Awaitable[Parked | str]]
# The file that defines a workflow for a workspace now, as errors name it.
FileOf = Callable[[str, str], Awaitable[str]]


class Again(Exception):
    """The step is not over: carry on with it (its next part, or the step the run was
    sent back to)."""


def failed(step: Step, message: str, **metadata: str) -> BlitzError:
    """The step failed (STEP_FAILED, naming it)."""
    return BlitzError(
        Reason.STEP_FAILED, f"step {step.id!r}: {message}", {"step": step.id, **metadata}
    )


def new_run() -> str:
    """A new run id: the run's, or a sub-workflow's."""
    return "r_" + uuid.uuid4().hex


@dataclass(frozen=True)
class StepContext:
    """Everything a step's work touches, for one advance of one run."""

    store: Store
    log: EventLog
    agent: AgentPort
    active: ActiveTurn
    io: TurnIO
    workspace: Path
    budget: TemplateBudget
    state: RunState
    definitions: Mapping[str, Workflow]
    file_of: FileOf

    async def flow(
        self,
        frame: Frame,
        step: Step,
        status: StepStatus,
        *,
        output: str = "",
        error: BlitzError | None = None,
        index: int | None = None,
    ) -> None:
        """Send `step`'s `flow_step`, with the run's state written in its transaction;
        `index`: the step's position when the frame has already moved past it."""
        workflow = self.definitions[frame.name]
        event = flow_event(workflow, frame, step, status, output, error, index=index)
        sid, tid = self.active.session_id, self.active.turn_id
        if status in (StepStatus.STARTED, StepStatus.RETRYING):
            await self.forget_asked()
        flow = FlowWrite(sid, tid, self.state.dump(), time.time())
        await self.log.commit(sid, tid, event, fence=self.active.rec.epoch, writes=(flow,))

    async def save(self) -> None:
        """Write the run's state with no event of its own, fenced as `flow` is."""
        sid, tid = self.active.session_id, self.active.turn_id
        flow = FlowWrite(sid, tid, self.state.dump(), time.time())
        await self.log.write(sid, tid, (flow,), fence=self.active.rec.epoch)

    async def forget_asked(self) -> None:
        """What was asked before now is not the next piece of work's to resume with (it
        is stored with the next flow_step, which every park sends)."""
        sid, tid = self.active.session_id, self.active.turn_id
        asked = await self.store.list_pending(sid, turn_id=tid, open_only=False)
        self.state.seen = sorted({r.request_id for r in asked})

    async def holds(self, frame: Frame, step: Step) -> bool:
        """Whether the step's `if` holds (it has one)."""
        assert step.if_ is not None
        try:
            return await condition_off_loop(step.if_, frame.params, frame.steps, budget=self.budget)
        except BudgetExceeded as exc:
            raise await self._over_budget(frame, step, "if", exc) from None
        except TemplateRefused as exc:
            raise failed(step, str(exc)) from None

    async def render(self, frame: Frame, step: Step, where: str, source: str) -> str:
        """The template at `steps[i].<where>` of `step`, rendered off the event loop."""
        try:
            return await render_off_loop(source, frame.params, frame.steps, budget=self.budget)
        except BudgetExceeded as exc:
            raise await self._over_budget(frame, step, where, exc) from None

    async def _over_budget(
        self, frame: Frame, step: Step, where: str, exc: BudgetExceeded
    ) -> BlitzError:
        file = await self.file_of(self.active.session.workspace, frame.name)
        field = f"steps[{frame.index}].{where}"
        return BlitzError(
            Reason.INVALID_ARGUMENT,
            f"{file}: {field}: step {step.id!r}: {exc}",
            {"file": file, "field": field, "step": step.id, "limit": exc.limit},
        )


class StepExecutor(Protocol):
    """Carries out the steps of one type (`steps/`)."""

    async def run(
        self, ctx: StepContext, frame: Frame, step: Step, results: Results
    ) -> Parked | str:
        """One go at `step`, the current step of `frame`: its output, or the requests it
        parked on; raises `Again` when the step is not over, a `BlitzError` when it failed."""
        ...
