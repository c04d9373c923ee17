"""The `command` step: one run_command call made by the built-in scripted model.

The command goes through the agent's own tool, so the COMMAND approval, the session's rules
and mode and the command box are those of any command the agent runs; this module only
watches for the call's result (`_Observed`). With `until`, the check command runs after it
(the frame's part "check") and both repeat until the check exits 0, at most
`until.max_attempts` checks, `until.backoff` apart. The output is masked as the command's
own events are: it goes into templates, flow_step events and the run's output.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from google.protobuf.json_format import MessageToDict

from blitz.core.workflows.step_context import (
    KEPT_OUTPUT,
    Again,
    Results,
    StepContext,
    failed,
)
from blitz.core.workflows.workflow_state import Frame, StepStatus, cap
from blitz.ports import AnswerResult, Parked, TurnIO
from blitz.ports.agent import HookVerdict, ModelCallUsage, RuleDecision
from blitz.redact import redact_text
from blitz.v1 import turn_pb2 as t
from blitz.workflows.definitions import CommandStep, Step

__all__ = ["CommandExecutor"]

# The model that carries out a command step: scripted, offline, free.
_SCRIPTED = "demo"


class _Observed:
    """The turn's IO, noting the result of a command step's run_command call."""

    def __init__(self, io: TurnIO) -> None:
        self._io = io
        self.result: dict[str, Any] | None = None
        # Steer text taken meanwhile: it is for the next prompt step, not a command's script.
        self.steer: list[str] = []

    def _note(self, event: t.TurnEvent) -> None:
        if event.HasField("tool_result") and event.tool_result.name == "run_command":
            self.result = MessageToDict(event.tool_result.result)

    def emit(self, event: t.TurnEvent) -> None:
        self._note(event)
        self._io.emit(event)

    async def commit(self, event: t.TurnEvent) -> None:
        self._note(event)
        await self._io.commit(event)

    async def pace(self) -> None:
        await self._io.pace()

    async def before_model_call(self) -> list[str]:
        self.steer.extend(await self._io.before_model_call())
        return []

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        await self._io.record_model_call(usage)

    async def before_change(self) -> None:
        await self._io.before_change()

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        await self._io.before_file_change(path, content)

    async def ask_now(self, question: t.Question) -> AnswerResult:
        return await self._io.ask_now(question)

    async def rule_decides(self, approval: t.ApprovalRequest) -> RuleDecision | None:
        return await self._io.rule_decides(approval)

    async def pre_tool(
        self,
        approval: t.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str] = frozenset(),
    ) -> HookVerdict | None:
        return await self._io.pre_tool(approval, tool_input, rewritable=rewritable)


class CommandExecutor:
    """Carries out `command` steps (`step_context.StepExecutor`)."""

    async def run(
        self, ctx: StepContext, frame: Frame, step: Step, results: Results
    ) -> Parked | str:
        assert isinstance(step, CommandStep)
        checking = frame.part == "check"
        assert not checking or step.until is not None
        source = step.until.run if checking and step.until is not None else step.run
        where = "until.run" if checking else "run"
        observed = _Observed(ctx.io)
        active = ctx.active
        policy = replace(active.policy(first=False), plan=False)
        if results is None:
            await ctx.forget_asked()
            command = await ctx.render(frame, step, where, source)
            script = "call run_command " + json.dumps({"command": command})
            outcome = await ctx.agent.start(
                io=observed,
                model=_SCRIPTED,
                workspace=ctx.workspace,
                history=None,
                prompt=script,
                policy=policy,
            )
        else:
            outcome = await ctx.agent.resume(
                io=observed,
                model=_SCRIPTED,
                workspace=ctx.workspace,
                history=active.rec.history or b"",
                results=results,
                policy=policy,
            )
        if observed.steer:  # back in the store, for the next prompt step's model call
            for text in observed.steer:
                await ctx.store.add_steer(active.session_id, active.turn_id, text)
            active.steer_waiting = True
        if isinstance(outcome, Parked):
            return outcome
        code, output = _exit_and_output(step, observed.result or {})
        if not checking:
            wanted = code == 0 if step.expect == "success" else code != 0
            if not wanted:
                raise failed(
                    step,
                    f"the command exited {code}; expected {step.expect}",
                    exit_code=str(code),
                )
            if step.until is None:
                return output
            frame.part, frame.kept = "check", cap(output, KEPT_OUTPUT)
            raise Again()
        return await self._checked(ctx, frame, step, code)

    async def _checked(self, ctx: StepContext, frame: Frame, step: CommandStep, code: int) -> str:
        """The `until` check exited `code`: the step's output, or once more after its wait."""
        if code == 0:
            return frame.kept
        frame.tries += 1
        until = step.until
        assert until is not None
        if frame.tries >= until.max_attempts:
            raise failed(
                step,
                f"the until check did not pass in {until.max_attempts} tries",
                exit_code=str(code),
            )
        error = failed(step, "the until check failed")
        await ctx.flow(frame, step, StepStatus.RETRYING, error=error)
        await asyncio.sleep(until.backoff)
        frame.part = ""
        raise Again()


def _exit_and_output(step: CommandStep, got: dict[str, Any]) -> tuple[int, str]:
    """The run_command result's exit code and masked output; STEP_FAILED when the command
    did not run to its end."""
    if "exitCode" in got or "exit_code" in got:
        code = got.get("exit_code", got.get("exitCode"))
    else:
        code = None
    output = redact_text(str(got.get("output", "")))
    if code is None:
        why = str(
            got.get("error") or ("it timed out" if got.get("timed_out") else "it did not run")
        )
        raise failed(step, f"the command did not run to its end: {why}")
    return int(code), output
