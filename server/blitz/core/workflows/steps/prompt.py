"""The `prompt` step: one agent run on the session's conversation from a templated prompt.

Its history is the session's: a step that ends stores the agent's history back, so the
next prompt step (and the next turn) goes on from it. A plan step rejected at its approval
is run again with the feedback after its prompt.
"""

from __future__ import annotations

from dataclasses import replace

from blitz.core.workflows.step_context import Results, StepContext
from blitz.core.workflows.workflow_state import Frame
from blitz.ports import Parked
from blitz.workflows.definitions import PromptStep, Step

__all__ = ["PromptExecutor"]


class PromptExecutor:
    """Carries out `prompt` steps (`step_context.StepExecutor`)."""

    async def run(
        self, ctx: StepContext, frame: Frame, step: Step, results: Results
    ) -> Parked | str:
        assert isinstance(step, PromptStep)
        active, agent = ctx.active, ctx.agent
        model = step.model or active.session.model
        policy = active.policy(first=False)
        policy = replace(
            policy,
            plan=step.plan,
            read_only=policy.read_only
            or ("the workflow step is read-only" if step.read_only else ""),
        )
        if results is None:
            await ctx.forget_asked()
            prompt = await ctx.render(frame, step, "prompt", step.prompt)
            if step.id in frame.feedback:
                prompt += f"\n\nThe previous plan was rejected. Feedback: {frame.feedback[step.id]}"
            outcome = await agent.start(
                io=ctx.io,
                model=model,
                workspace=ctx.workspace,
                history=await ctx.store.get_history(active.session_id),
                prompt=prompt,
                policy=policy,
            )
        else:
            outcome = await agent.resume(
                io=ctx.io,
                model=model,
                workspace=ctx.workspace,
                history=active.rec.history or b"",
                results=results,
                policy=policy,
            )
        if isinstance(outcome, Parked):
            return outcome
        await ctx.store.set_history(active.session_id, outcome.history)
        return outcome.output
