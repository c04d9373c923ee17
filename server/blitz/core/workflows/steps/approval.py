"""The `approval` step: a question put to the user, or a plan step's output to accept.

It parks the turn on one question (pure data in the store, answerable from any client and
any process); the answer is the step's output. With `of: STEP` the options are accept and
reject; a rejection asks what should change, then sends the run back to the plan step with
that feedback (at most `_MAX_REPLANS` times).
"""

from __future__ import annotations

import uuid

from blitz.core.workflows.step_context import Again, Results, StepContext, failed
from blitz.core.workflows.workflow_state import Frame, StepStatus
from blitz.ports import AnswerResult, Parked
from blitz.v1 import turn_pb2 as t
from blitz.workflows.definitions import ApprovalStep, Step

__all__ = ["ApprovalExecutor"]

# Rejections of one plan before the run gives up.
_MAX_REPLANS = 10
_ACCEPT, _REJECT = "accept", "reject"


class ApprovalExecutor:
    """Carries out `approval` steps (`step_context.StepExecutor`)."""

    async def run(
        self, ctx: StepContext, frame: Frame, step: Step, results: Results
    ) -> Parked | str:
        assert isinstance(step, ApprovalStep)
        if results is None:
            return await self._ask(ctx, frame, step)
        got = results.get(frame.asked)
        answers = list(got.answers) if isinstance(got, AnswerResult) else []
        if not answers:
            raise failed(step, "no answer came")
        answer = ", ".join(answers)
        if step.of is None:
            return answer
        if frame.part != "feedback":
            if answer == _ACCEPT:
                return _ACCEPT
            frame.part = "feedback"
            raise Again()
        # Rejected, with feedback: back to the plan step, whose prompt gets it.
        frame.rejections += 1
        if frame.rejections > _MAX_REPLANS:
            raise failed(step, f"the plan was rejected {_MAX_REPLANS} times")
        workflow = ctx.definitions[frame.name]
        target = next(i for i, s in enumerate(workflow.steps) if s.id == step.of)
        frame.feedback[step.of] = answer
        await ctx.flow(frame, step, StepStatus.SUCCEEDED, output=f"{_REJECT}: {answer}")
        before = {s.id for s in workflow.steps[:target]}
        frame.steps = {k: v for k, v in frame.steps.items() if k in before}
        frame.index, frame.attempt, frame.part = target, 0, ""
        raise Again()

    async def _ask(self, ctx: StepContext, frame: Frame, step: ApprovalStep) -> Parked:
        """Park on the step's question: its own, the plan's accept/reject, or the
        feedback after a rejection."""
        await ctx.forget_asked()
        if step.of is None:
            assert step.question is not None
            text = await ctx.render(frame, step, "question", step.question)
            options = [
                await ctx.render(frame, step, f"options[{i}]", option)
                for i, option in enumerate(step.options)
            ]
        elif frame.part == "feedback":
            text, options = f"What should change in the plan of {step.of!r}?", []
        else:
            plan = frame.steps.get(step.of, {}).get("output", "")
            text = f"Accept the plan of step {step.of!r}?\n\n{plan}"
            options = [_ACCEPT, _REJECT]
        frame.asked = "q_" + uuid.uuid4().hex
        question = t.Question(request_id=frame.asked, question=text, options=options)
        return Parked(history=b"", requests=[t.TurnEvent(question=question)])
