"""The `workflow` step: another workflow, run in a nested frame with its own params.

The child frame is made once (its params rendered from the parent's templates) and kept in
the run's state, so a resumed or taken-over run goes on inside it; its steps send their own
`flow_step` events with their own run id. The frame's steps are run by the step loop, handed
in as `nested`: this module never imports it.
"""

from __future__ import annotations

from blitz.core.workflows.step_context import Results, RunFrame, StepContext, new_run
from blitz.core.workflows.workflow_state import Frame
from blitz.ports import Parked
from blitz.workflows import bind_params
from blitz.workflows.definitions import Step, SubWorkflowStep

__all__ = ["SubWorkflowExecutor"]


class SubWorkflowExecutor:
    """Carries out `workflow` steps (`step_context.StepExecutor`)."""

    def __init__(self, nested: RunFrame) -> None:
        self._nested = nested

    async def run(
        self, ctx: StepContext, frame: Frame, step: Step, results: Results
    ) -> Parked | str:
        assert isinstance(step, SubWorkflowStep)
        if frame.child is None:
            sub = ctx.definitions[step.workflow]
            given = {
                k: await ctx.render(frame, step, f"params.{k}", v) if isinstance(v, str) else v
                for k, v in step.params.items()
            }
            frame.child = Frame(name=step.workflow, run=new_run(), params=bind_params(sub, given))
        return await self._nested(frame.child, results)
