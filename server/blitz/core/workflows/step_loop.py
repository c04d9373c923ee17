"""The step loop: one advance of a workflow run, step after step, frame inside frame.

It decides what happens around each step — its `if`, its `started`, its `timeout`, its
retries and their waits, its end (`succeeded`, `failed`, `cancelled`) — and hands the step
itself to the executor of its type (`steps/`), chosen from their table. It never does a
step's work, and holds nothing across a park: everything it must know next time is in the
run's state, written with each `flow_step`.

A retry's wait is part of that state: the `retrying` flow_step stores when the next attempt
is due (`Frame.due`), and the wait is over once the state says so (`StepContext.save`). A
run taken over after a crash during the wait waits only what is left of it (nothing when
it is past), and a run taken over after the attempt began knows that attempt was in flight.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from blitz.core.workflows.step_context import KEPT_OUTPUT, Again, Results, StepContext, failed
from blitz.core.workflows.steps import executors
from blitz.core.workflows.workflow_state import Frame, StepStatus, cap
from blitz.errors import BlitzError, Reason
from blitz.ports import Parked
from blitz.v1 import turn_pb2 as t
from blitz.workflows import TemplateRefused
from blitz.workflows.definitions import Step

__all__ = ["StepLoop"]

log = structlog.get_logger(__name__)


class StepLoop:
    """One advance of one run: its frames' steps, from where the state says it stopped."""

    def __init__(self, ctx: StepContext, *, restarted: bool) -> None:
        self._ctx = ctx
        # Taken over from a process that died: the step in flight then has failed.
        self._restarted = restarted
        self._executors = executors(self.steps)

    async def run(self, results: Results) -> Parked | str:
        """The run from its current step: its output (the last step's), or the requests
        its current step parked on; within the workflow's `limits.timeout`."""
        deadline = self._deadline()
        try:
            async with asyncio.timeout_at(deadline):
                return await self.steps(self._ctx.state.root, results)
        except TimeoutError:
            if deadline is None or asyncio.get_running_loop().time() < deadline:
                raise
            raise BlitzError(
                Reason.TURN_TIMEOUT, "the workflow run passed its `limits.timeout`"
            ) from None

    def _deadline(self) -> float | None:
        ctx = self._ctx
        limits = ctx.definitions[ctx.state.root.name].limits
        if limits.timeout is None:
            return None
        left = ctx.active.rec.create_time + limits.timeout - time.time()
        return asyncio.get_running_loop().time() + left

    async def steps(self, frame: Frame, results: Results) -> Parked | str:
        """Run `frame`'s steps from its current one; its output (the last step's), or the
        requests its current step parked on."""
        ctx = self._ctx
        workflow = ctx.definitions[frame.name]
        while frame.index < len(workflow.steps):
            step = workflow.steps[frame.index]
            # Taken over from a process that died: a step it had begun was in flight (one
            # waiting out its retry's backoff had not begun its attempt).
            in_flight = False
            if self._restarted and frame.child is None:
                self._restarted = False
                in_flight = frame.attempt > 0 and not frame.due
            if frame.due:
                await self._wait_until_due(frame)
            if frame.attempt == 0 and not await self._begin(frame, step):
                continue  # skipped
            outcome: Parked | str | Again
            if in_flight:
                outcome, frame.waiting = "", False
                error: BlitzError | None = BlitzError(
                    Reason.SERVER_RESTARTED,
                    f"the server stopped while step {step.id!r} ran",
                    {"step": step.id},
                )
            else:
                outcome, error = await self._attempt(frame, step, results)
            results = None
            if isinstance(outcome, Parked):
                ref = t.FlowStepRef(run=frame.run, id=step.id, index=frame.index + 1)
                for request in outcome.requests:
                    if not request.HasField("step"):  # a sub-workflow's step is its own
                        request.step.CopyFrom(ref)
                if not frame.waiting:
                    frame.waiting = True
                    await ctx.flow(frame, step, StepStatus.WAITING)
                return outcome
            frame.waiting = False
            if isinstance(outcome, Again):
                continue
            if error is None:
                await self._succeeded(frame, step, outcome)
                continue
            await self._retry_or_fail(frame, step, error)
        # The run's output: its last step's (the last that ran, when the last was skipped).
        for done in reversed(workflow.steps):
            if frame.status_of(done.id) is StepStatus.SUCCEEDED:
                return frame.steps[done.id]["output"]
        return ""

    async def _begin(self, frame: Frame, step: Step) -> bool:
        """Start the frame's current step (`started`), or skip it when its `if` is false
        (`skipped`, and False)."""
        ctx = self._ctx
        try:
            skip = step.if_ is not None and not await ctx.holds(frame, step)
        except BlitzError as exc:
            frame.finish(step.id, StepStatus.FAILED)
            await ctx.flow(frame, step, StepStatus.FAILED, error=exc)
            raise
        if skip:
            frame.finish(step.id, StepStatus.SKIPPED)
            await ctx.flow(frame, step, StepStatus.SKIPPED)
            frame.index += 1
            return False
        frame.attempt, frame.part, frame.tries, frame.kept = 1, "", 0, ""
        await ctx.flow(frame, step, StepStatus.STARTED)
        return True

    async def _succeeded(self, frame: Frame, step: Step, output: str) -> None:
        """The step succeeded: keep its output and go on to the next."""
        frame.finish(step.id, StepStatus.SUCCEEDED, cap(output, KEPT_OUTPUT))
        at = frame.index
        frame.index += 1
        frame.attempt = 0
        frame.child = None
        # Sent as of the step's own position; the state stored with it has moved past it.
        await self._ctx.flow(frame, step, StepStatus.SUCCEEDED, output=output, index=at)

    async def _retry_or_fail(self, frame: Frame, step: Step, error: BlitzError) -> None:
        """The step failed: `retrying`, with its next attempt due after the retry's wait
        (the loop waits it out), or `failed` and the run with it."""
        retry = step.retry
        if (
            frame.attempt < retry.max_attempts
            and error.reason is not Reason.INVALID_ARGUMENT  # would fail the same again
            and (not retry.on or error.reason.wire in retry.on)
        ):
            frame.attempt += 1
            frame.part, frame.tries, frame.kept, frame.child = "", 0, "", None
            frame.due = time.time() + retry.wait(frame.attempt - 1)
            await self._ctx.flow(frame, step, StepStatus.RETRYING, error=error)
            return
        frame.finish(step.id, StepStatus.FAILED)
        await self._ctx.flow(frame, step, StepStatus.FAILED, error=error)
        if "step" not in error.metadata:
            error.metadata["step"] = step.id
        raise error

    async def _wait_until_due(self, frame: Frame) -> None:
        """Wait for the frame's next attempt to be due (what is left of the wait, after a
        take-over), then store that it has begun: a crash from here on is in flight."""
        left = frame.due - time.time()
        if left > 0:
            await asyncio.sleep(left)
        frame.due = 0.0
        await self._ctx.save()

    def _stopped_why(self) -> BlitzError:
        """Why a step was stopped with no cancel asked: a deadline (the turn's, or the
        run's `limits.timeout`) that passed, or else the server stopping."""
        ctx = self._ctx
        now = time.time()
        deadlines = [ctx.active.rec.deadline]
        limits = ctx.definitions[ctx.state.root.name].limits
        if limits.timeout is not None:
            deadlines.append(ctx.active.rec.create_time + limits.timeout)
        if any(d is not None and now >= d - 0.1 for d in deadlines):
            return BlitzError(Reason.TURN_TIMEOUT, "the run passed its deadline")
        return BlitzError(Reason.SERVER_RESTARTED, "the server stopped")

    async def _attempt(
        self, frame: Frame, step: Step, results: Results
    ) -> tuple[Parked | str | Again, BlitzError | None]:
        """One go at the step by its type's executor: its output, the requests it parked
        on, `Again`, or why it failed. A cancel is sent as the step's `cancelled` and goes
        on up."""
        ctx = self._ctx
        ctx.active.step = t.FlowStepRef(run=frame.run, id=step.id, index=frame.index + 1)
        executor = self._executors[step.type]
        try:
            async with asyncio.timeout(step.timeout):
                return await executor.run(ctx, frame, step, results), None
        except Again as again:
            return again, None
        except TimeoutError:
            if step.timeout is None:
                raise
            error = BlitzError(
                Reason.TURN_TIMEOUT,
                f"step {step.id!r} passed its timeout of {step.timeout:g}s",
                {"step": step.id},
            )
            return "", error
        except BlitzError as exc:
            if exc.reason in (Reason.CANCELLED, Reason.SHUTTING_DOWN):
                raise
            return "", exc
        except TemplateRefused as exc:
            return "", failed(step, str(exc))
        except asyncio.CancelledError:
            frame.waiting = False  # said here: the run's end has nothing more to say of it
            why = ctx.active.cancel_reason or self._stopped_why()
            try:
                await ctx.flow(frame, step, StepStatus.CANCELLED, error=why)
            except Exception:
                # The cancel goes on regardless: the run's end says what it can.
                log.warning("workflow_step_cancel_unrecorded", step=step.id, exc_info=True)
            raise
        finally:
            ctx.active.step = None
