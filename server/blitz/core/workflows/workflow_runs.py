"""Workflow runs: a `/run NAME key=value …` command turn carried out step by step.

A run is one turn of the session, driven by the turn driver like any other (`turns.py`
calls `WorkflowRuns.advance` for its first run and for each resume): so it is admitted,
queued, cancelled, timed out and watched as any turn is, and when a step needs a person it
parks the turn as any turn parks — on requests that are pure data in the store, answerable
from any client and any process, after a restart too. No coroutine waits across a park.

The run's state (`RunState`: the current step of each nested workflow, its attempt, each
finished step's output and status, and the resolved definitions, so that a file changed
mid-run changes nothing) is written with every `flow_step` event, in the same transaction
(`EventLog.commit(writes=…)`), fenced like the turn's other writes. Each advance reads it
back, so a resumed run picks up at the step it stopped at and never re-runs one that
succeeded.

Step types: `prompt` is one agent run on the session's conversation; `command` is one
run_command call made by the built-in scripted model (the agent's own tool, so the COMMAND
approval, the rules and the box are those of any command); `approval` parks on a question
(or, `of: STEP`, on accepting that plan step's output, a rejection asking for feedback and
sending the run back to the plan step); `workflow` runs another workflow in a nested frame.

Templates are rendered off the event loop, each within the run's `TemplateBudget`; one that
goes past it fails its step with INVALID_ARGUMENT naming the file, the field, the step and
the limit, and is not retried (the same template fails the same way again).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog
from google.protobuf.json_format import MessageToDict

from blitz.core.driver.active_turn import ActiveTurn
from blitz.core.driver.runners import OpenWorkspace
from blitz.core.events.event_log import EventLog
from blitz.core.workflows.workflow_state import Frame, RunState, cap, flow_event, parse_run
from blitz.errors import BlitzError, Reason
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.ports import AgentPort, AnswerResult, Completed, Parked, Resolution, TurnIO
from blitz.ports.agent import ModelCallUsage, RuleDecision
from blitz.redact import redact_text
from blitz.store import FlowWrite, Store, TurnRecord
from blitz.v1 import turn_pb2 as t
from blitz.workflows import (
    BudgetExceeded,
    TemplateBudget,
    TemplateRefused,
    Workflow,
    bind_params,
    condition_off_loop,
    render_off_loop,
    resolve,
    workflows_of,
)
from blitz.workflows.catalog import file_of
from blitz.workflows.definitions import (
    ApprovalStep,
    CommandStep,
    PromptStep,
    Step,
    SubWorkflowStep,
)

__all__ = ["WorkflowRuns"]

log = structlog.get_logger(__name__)

# A step's output as the run's state keeps it (its `flow_step` carries less: EVENT_OUTPUT).
_KEPT_OUTPUT = 64 * 1024
# Rejections of one plan before the run gives up.
_MAX_REPLANS = 10
# The model that carries out a command step: scripted, offline, free.
_SCRIPTED = "demo"
_ACCEPT, _REJECT = "accept", "reject"
# The slash command whose turns are workflow runs.
_COMMAND = "/run"


class _Again(Exception):
    """The step is not over: carry on with it (its next part, or the step the run was
    sent back to)."""


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

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        await self._io.before_file_change(path, content)

    async def ask_now(self, question: t.Question) -> AnswerResult:
        return await self._io.ask_now(question)

    async def rule_decides(self, approval: t.ApprovalRequest) -> RuleDecision | None:
        return await self._io.rule_decides(approval)


def _failed(step: Step, message: str, **metadata: str) -> BlitzError:
    return BlitzError(
        Reason.STEP_FAILED, f"step {step.id!r}: {message}", {"step": step.id, **metadata}
    )


def _new_run() -> str:
    return "r_" + uuid.uuid4().hex


class WorkflowRuns:
    """Carries out `/run` turns (see the module doc): the turn driver's runner of workflow
    runs (`runners.TurnRunner`), asked before the slash commands' runner."""

    def __init__(
        self,
        *,
        store: Store,
        log: EventLog,
        agent: AgentPort,
        workspace_root: Path,
        workflows_dir: Path | None,
        open_workspace: OpenWorkspace,
        template_budget: TemplateBudget | None = None,
    ) -> None:
        self._store = store
        self._log = log
        self._agent = agent
        self._workspace_root = workspace_root
        self._dir = workflows_dir
        self._open_workspace = open_workspace
        self.template_budget = template_budget or TemplateBudget()

    # The turn driver's runner (runners.TurnRunner)

    def claims(self, turn: t.Turn) -> bool:
        return turn.command and turn.text.strip().partition(" ")[0].lower() == _COMMAND

    async def start(self, active: ActiveTurn, io: TurnIO) -> Completed | Parked | str:
        return await self._advance(active, io, None, restarted=False)

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Completed | Parked | str:
        return await self._advance(active, io, results, restarted=False)

    async def survives(self, rec: TurnRecord) -> bool:
        """A run whose state is stored goes on at the step it was in."""
        return await self._store.get_workflow_run(rec.session_id, rec.turn_id) is not None

    async def take_over(self, active: ActiveTurn, io: TurnIO) -> Completed | Parked | str:
        """At the step it was in, which is retried or fails with SERVER_RESTARTED."""
        log.info("workflow_run_resumed", session_id=active.session_id, turn_id=active.turn_id)
        return await self._advance(active, io, None, restarted=True)

    async def _advance(
        self,
        active: ActiveTurn,
        io: TurnIO,
        results: dict[str, Resolution] | None,
        *,
        restarted: bool,
    ) -> Completed | Parked | str:
        log.info("workflow_advanced", resumed=results is not None)
        workspace = self._open_workspace(active.session)
        arg = active.turn.text.strip().partition(" ")[2].strip()
        return await self.advance(active, io, workspace, arg, results, restarted=restarted)

    async def file_of(self, workspace: str, name: str) -> str:
        """The file that defines the workflow `name` for `workspace` now, as errors name it
        (a run keeps its definitions, not where they came from)."""
        try:
            found = await FILE_CALLS.run(workflows_of, self._workspace_root, workspace, self._dir)
        except CallTimedOut:
            found = {}
        item = found.get(name)
        return file_of(item) if item is not None else f"{name}.yaml"

    async def prepare(self, workspace: str, name: str, given: Mapping[str, str]) -> RunState:
        """The run's first state: the workflow and its sub-workflows resolved, its params
        bound; INVALID_ARGUMENT for a broken definition or bad params."""
        found = await FILE_CALLS.run(workflows_of, self._workspace_root, workspace, self._dir)
        workflow = resolve(name, found)
        params = bind_params(workflow, given)
        definitions: dict[str, Any] = {}
        pending = [workflow]
        while pending:
            current = pending.pop()
            if current.workflow in definitions:
                continue
            definitions[current.workflow] = current.model_dump(mode="json", by_alias=True)
            for step in current.steps:
                if isinstance(step, SubWorkflowStep):
                    sub = found[step.workflow].workflow
                    assert sub is not None  # resolve checked it
                    pending.append(sub)
                if isinstance(step, PromptStep) and step.model:
                    self._agent.validate_model(step.model)
        return RunState(
            definitions=definitions, root=Frame(name=name, run=_new_run(), params=params)
        )

    async def advance(
        self,
        active: ActiveTurn,
        io: TurnIO,
        workspace: Path,
        arg: str,
        results: dict[str, Resolution] | None,
        *,
        restarted: bool = False,
    ) -> Completed | Parked | str:
        """One run of the turn: from the start, from where it stopped, or on with `results`."""
        stored = await self._store.get_workflow_run(active.session_id, active.turn_id)
        if stored is None:
            name, given = parse_run(arg)
            state = await self.prepare(active.session.workspace, name, given)
            results = None
        else:
            state = RunState.load(stored)
        if results is not None:
            seen = set(state.seen)
            results = {k: v for k, v in results.items() if k not in seen}
        run = _Run(self, active, io, workspace, state)
        run.restarted = restarted
        run.apply_limits()
        return await run.frame(state.root, results)

    async def ended(self, active: ActiveTurn, error: BlitzError | None) -> None:
        """A run ends while parked (cancelled, timed out, its session closed): its waiting
        steps are `cancelled`, innermost first. A step that was running said so itself."""
        if error is None:
            return
        sid, tid = active.session_id, active.turn_id
        stored = await self._store.get_workflow_run(sid, tid)
        if stored is None:
            return
        state = RunState.load(stored)
        chain: list[Frame] = []
        frame: Frame | None = state.root
        while frame is not None:
            chain.append(frame)
            frame = frame.child
        waiting = [f for f in reversed(chain) if f.waiting]
        for each in waiting:
            each.waiting = False
        for each in waiting:
            workflow = Workflow.model_validate(state.definitions[each.name])
            event = flow_event(workflow, each, workflow.steps[each.index], "cancelled", "", error)
            flow = FlowWrite(sid, tid, state.dump(), time.time())
            await self._log.commit(sid, tid, event, fence=active.rec.epoch, writes=(flow,))


class _Run:
    """One advance of one run."""

    def __init__(
        self, runs: WorkflowRuns, active: ActiveTurn, io: TurnIO, workspace: Path, state: RunState
    ) -> None:
        self._runs = runs
        self._active = active
        self._io = io
        self._workspace = workspace
        self._state = state
        # Taken over from a process that died: the step in flight then has failed.
        self.restarted = False
        self._defs: dict[str, Workflow] = {
            name: Workflow.model_validate(raw) for name, raw in state.definitions.items()
        }

    def apply_limits(self) -> None:
        """The workflow's `limits` on top of the turn's own: the turn's counters (model
        calls, cost) cover every step of the run, so the tighter cap bounds them all."""
        limits = self._defs[self._state.root.name].limits
        turn = self._active.turn
        if limits.max_cost_usd is not None and not 0 < turn.max_cost_usd <= limits.max_cost_usd:
            turn.max_cost_usd = limits.max_cost_usd
        if limits.max_turns is not None and not 0 < turn.max_turns <= limits.max_turns:
            turn.max_turns = limits.max_turns

    def _deadline(self) -> float | None:
        limits = self._defs[self._state.root.name].limits
        if limits.timeout is None:
            return None
        left = self._active.rec.create_time + limits.timeout - time.time()
        return asyncio.get_running_loop().time() + left

    # Events and state

    async def _flow(
        self,
        frame: Frame,
        step: Step,
        status: str,
        *,
        output: str = "",
        error: BlitzError | None = None,
    ) -> None:
        event = flow_event(self._defs[frame.name], frame, step, status, output, error)
        sid, tid = self._active.session_id, self._active.turn_id
        if status in ("started", "retrying"):
            await self._forget_asked()
        flow = FlowWrite(sid, tid, self._state.dump(), time.time())
        await self._runs._log.commit(sid, tid, event, fence=self._active.rec.epoch, writes=(flow,))

    async def _forget_asked(self) -> None:
        """What was asked before now is not the next piece of work's to resume with (it
        is stored with the next flow_step, which every park sends)."""
        sid, tid = self._active.session_id, self._active.turn_id
        asked = await self._runs._store.list_pending(sid, turn_id=tid, open_only=False)
        self._state.seen = sorted({r.request_id for r in asked})

    # The steps of one frame

    async def frame(
        self, frame: Frame, results: dict[str, Resolution] | None
    ) -> Completed | Parked | str:
        """Run `frame`'s steps from its current one; its output (the last step's), or the
        requests its current step parked on."""
        deadline = self._deadline() if frame is self._state.root else None
        try:
            async with asyncio.timeout_at(deadline):
                return await self._steps(frame, results)
        except TimeoutError:
            if deadline is None or asyncio.get_running_loop().time() < deadline:
                raise
            raise BlitzError(
                Reason.TURN_TIMEOUT, "the workflow run passed its `limits.timeout`"
            ) from None

    async def _steps(
        self, frame: Frame, results: dict[str, Resolution] | None
    ) -> Completed | Parked | str:
        workflow = self._defs[frame.name]
        while frame.index < len(workflow.steps):
            step = workflow.steps[frame.index]
            # Taken over from a process that died: a step it had started was in flight.
            in_flight = False
            if self.restarted and frame.child is None:
                self.restarted = False
                in_flight = frame.attempt > 0
            if frame.attempt == 0:
                try:
                    skip = step.if_ is not None and not await self._holds(frame, step)
                except BlitzError as exc:
                    frame.steps[step.id] = {"output": "", "status": "failed"}
                    await self._flow(frame, step, "failed", error=exc)
                    raise
                if skip:
                    frame.steps[step.id] = {"output": "", "status": "skipped"}
                    await self._flow(frame, step, "skipped")
                    frame.index += 1
                    continue
                frame.attempt, frame.part, frame.tries, frame.kept = 1, "", 0, ""
                await self._flow(frame, step, "started")
            outcome: Completed | Parked | str | _Again
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
                    await self._flow(frame, step, "waiting")
                return outcome
            frame.waiting = False
            if isinstance(outcome, _Again):
                continue
            if error is None:
                assert isinstance(outcome, str)
                frame.steps[step.id] = {
                    "output": cap(outcome, _KEPT_OUTPUT),
                    "status": "succeeded",
                }
                frame.index += 1
                frame.attempt = 0
                frame.child = None
                await self._flow_at(frame, step, "succeeded", output=outcome)
                continue
            retry = step.retry
            if (
                frame.attempt < retry.max_attempts
                and error.reason is not Reason.INVALID_ARGUMENT  # would fail the same again
                and (not retry.on or error.reason.wire in retry.on)
            ):
                frame.attempt += 1
                frame.part, frame.tries, frame.kept, frame.child = "", 0, "", None
                await self._flow(frame, step, "retrying", error=error)
                await asyncio.sleep(retry.backoff * 2 ** (frame.attempt - 2))
                continue
            frame.steps[step.id] = {"output": "", "status": "failed"}
            await self._flow(frame, step, "failed", error=error)
            if "step" not in error.metadata:
                error.metadata["step"] = step.id
            raise error
        # The run's output: its last step's (the last that ran, when the last was skipped).
        for done in reversed(workflow.steps):
            if frame.steps.get(done.id, {}).get("status") == "succeeded":
                return frame.steps[done.id]["output"]
        return ""

    async def _flow_at(self, frame: Frame, step: Step, status: str, *, output: str) -> None:
        """A step's end, sent as of its own position (the frame has moved past it)."""
        frame.index -= 1
        try:
            await self._flow(frame, step, status, output=output)
        finally:
            frame.index += 1

    def _stopped_why(self) -> BlitzError:
        """Why a step was stopped with no cancel asked: a deadline (the turn's, or the
        run's `limits.timeout`) that passed, or else the server stopping."""
        now = time.time()
        deadlines = [self._active.rec.deadline]
        limits = self._defs[self._state.root.name].limits
        if limits.timeout is not None:
            deadlines.append(self._active.rec.create_time + limits.timeout)
        if any(d is not None and now >= d - 0.1 for d in deadlines):
            return BlitzError(Reason.TURN_TIMEOUT, "the run passed its deadline")
        return BlitzError(Reason.SERVER_RESTARTED, "the server stopped")

    async def _holds(self, frame: Frame, step: Step) -> bool:
        assert step.if_ is not None
        budget = self._runs.template_budget
        try:
            return await condition_off_loop(step.if_, frame.params, frame.steps, budget=budget)
        except BudgetExceeded as exc:
            raise await self._over_budget(frame, step, "if", exc) from None
        except TemplateRefused as exc:
            raise _failed(step, str(exc)) from None

    async def _render(self, frame: Frame, step: Step, where: str, source: str) -> str:
        """The template at `steps[i].<where>` of `step`, rendered off the event loop."""
        budget = self._runs.template_budget
        try:
            return await render_off_loop(source, frame.params, frame.steps, budget=budget)
        except BudgetExceeded as exc:
            raise await self._over_budget(frame, step, where, exc) from None

    async def _over_budget(
        self, frame: Frame, step: Step, where: str, exc: BudgetExceeded
    ) -> BlitzError:
        file = await self._runs.file_of(self._active.session.workspace, frame.name)
        field = f"steps[{frame.index}].{where}"
        return BlitzError(
            Reason.INVALID_ARGUMENT,
            f"{file}: {field}: step {step.id!r}: {exc}",
            {"file": file, "field": field, "step": step.id, "limit": exc.limit},
        )

    async def _attempt(
        self, frame: Frame, step: Step, results: dict[str, Resolution] | None
    ) -> tuple[Completed | Parked | str | _Again, BlitzError | None]:
        """One go at the step: its output, the requests it parked on, `_Again`, or why it
        failed. A cancel is sent as the step's `cancelled` and goes on up."""
        self._active.step = t.FlowStepRef(run=frame.run, id=step.id, index=frame.index + 1)
        try:
            async with asyncio.timeout(step.timeout):
                return await self._carry_out(frame, step, results), None
        except _Again as again:
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
            return "", _failed(step, str(exc))
        except asyncio.CancelledError:
            frame.waiting = False  # said here: the run's end has nothing more to say of it
            why = self._active.cancel_reason or self._stopped_why()
            try:
                await self._flow(frame, step, "cancelled", error=why)
            except Exception:
                # The cancel goes on regardless: the run's end says what it can.
                log.warning("workflow_step_cancel_unrecorded", step=step.id, exc_info=True)
            raise
        finally:
            self._active.step = None

    async def _carry_out(
        self, frame: Frame, step: Step, results: dict[str, Resolution] | None
    ) -> Completed | Parked | str:
        if isinstance(step, PromptStep):
            return await self._prompt(frame, step, results)
        if isinstance(step, CommandStep):
            return await self._command(frame, step, results)
        if isinstance(step, ApprovalStep):
            return await self._approval(frame, step, results)
        return await self._workflow(frame, step, results)

    # Step types

    async def _prompt(
        self, frame: Frame, step: PromptStep, results: dict[str, Resolution] | None
    ) -> Parked | str:
        active, agent = self._active, self._runs._agent
        model = step.model or active.session.model
        policy = active.policy(first=False)
        policy = replace(
            policy,
            plan=step.plan,
            read_only=policy.read_only
            or ("the workflow step is read-only" if step.read_only else ""),
        )
        store = self._runs._store
        if results is None:
            await self._forget_asked()
            prompt = await self._render(frame, step, "prompt", step.prompt)
            if step.id in frame.feedback:
                prompt += f"\n\nThe previous plan was rejected. Feedback: {frame.feedback[step.id]}"
            outcome = await agent.start(
                io=self._io,
                model=model,
                workspace=self._workspace,
                history=await store.get_history(active.session_id),
                prompt=prompt,
                policy=policy,
            )
        else:
            outcome = await agent.resume(
                io=self._io,
                model=model,
                workspace=self._workspace,
                history=active.rec.history or b"",
                results=results,
                policy=policy,
            )
        if isinstance(outcome, Parked):
            return outcome
        await store.set_history(active.session_id, outcome.history)
        return outcome.output

    async def _command(
        self, frame: Frame, step: CommandStep, results: dict[str, Resolution] | None
    ) -> Parked | str:
        checking = frame.part == "check"
        assert not checking or step.until is not None
        source = step.until.run if checking and step.until is not None else step.run
        where = "until.run" if checking else "run"
        observed = _Observed(self._io)
        agent, active = self._runs._agent, self._active
        policy = replace(active.policy(first=False), plan=False)
        if results is None:
            await self._forget_asked()
            command = await self._render(frame, step, where, source)
            script = "call run_command " + json.dumps({"command": command})
            outcome = await agent.start(
                io=observed,
                model=_SCRIPTED,
                workspace=self._workspace,
                history=None,
                prompt=script,
                policy=policy,
            )
        else:
            outcome = await agent.resume(
                io=observed,
                model=_SCRIPTED,
                workspace=self._workspace,
                history=active.rec.history or b"",
                results=results,
                policy=policy,
            )
        if observed.steer:  # back in the store, for the next prompt step's model call
            for text in observed.steer:
                await self._runs._store.add_steer(active.session_id, active.turn_id, text)
            active.steer_waiting = True
        if isinstance(outcome, Parked):
            return outcome
        got = observed.result or {}
        if "exitCode" in got or "exit_code" in got:
            code = got.get("exit_code", got.get("exitCode"))
        else:
            code = None
        # Masked as the command's own events are: a step's output goes into templates,
        # flow_step events and the run's output.
        output = redact_text(str(got.get("output", "")))
        if code is None:
            why = str(
                got.get("error") or ("it timed out" if got.get("timed_out") else "it did not run")
            )
            raise _failed(step, f"the command did not run to its end: {why}")
        code = int(code)
        if not checking:
            wanted = code == 0 if step.expect == "success" else code != 0
            if not wanted:
                raise _failed(
                    step,
                    f"the command exited {code}; expected {step.expect}",
                    exit_code=str(code),
                )
            if step.until is None:
                return output
            frame.part, frame.kept = "check", cap(output, _KEPT_OUTPUT)
            raise _Again()
        if code == 0:
            return frame.kept
        frame.tries += 1
        until = step.until
        assert until is not None
        if frame.tries >= until.max_attempts:
            raise _failed(
                step,
                f"the until check did not pass in {until.max_attempts} tries",
                exit_code=str(code),
            )
        await self._flow(frame, step, "retrying", error=_failed(step, "the until check failed"))
        await asyncio.sleep(until.backoff)
        frame.part = ""
        raise _Again()

    async def _approval(
        self, frame: Frame, step: ApprovalStep, results: dict[str, Resolution] | None
    ) -> Parked | str:
        if results is None:
            await self._forget_asked()
            if step.of is None:
                assert step.question is not None
                text = await self._render(frame, step, "question", step.question)
                options = [
                    await self._render(frame, step, f"options[{i}]", option)
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
        got = results.get(frame.asked)
        answers = list(got.answers) if isinstance(got, AnswerResult) else []
        if not answers:
            raise _failed(step, "no answer came")
        answer = ", ".join(answers)
        if step.of is None:
            return answer
        if frame.part != "feedback":
            if answer == _ACCEPT:
                return _ACCEPT
            frame.part = "feedback"
            raise _Again()
        # Rejected, with feedback: back to the plan step, whose prompt gets it.
        frame.rejections += 1
        if frame.rejections > _MAX_REPLANS:
            raise _failed(step, f"the plan was rejected {_MAX_REPLANS} times")
        workflow = self._defs[frame.name]
        target = next(i for i, s in enumerate(workflow.steps) if s.id == step.of)
        frame.feedback[step.of] = answer
        await self._flow(frame, step, "succeeded", output=f"{_REJECT}: {answer}")
        frame.steps = {
            k: v for k, v in frame.steps.items() if k in {s.id for s in workflow.steps[:target]}
        }
        frame.index, frame.attempt, frame.part = target, 0, ""
        raise _Again()

    async def _workflow(
        self, frame: Frame, step: SubWorkflowStep, results: dict[str, Resolution] | None
    ) -> Completed | Parked | str:
        if frame.child is None:
            sub = self._defs[step.workflow]
            given = {
                k: await self._render(frame, step, f"params.{k}", v) if isinstance(v, str) else v
                for k, v in step.params.items()
            }
            frame.child = Frame(name=step.workflow, run=_new_run(), params=bind_params(sub, given))
        return await self._steps(frame.child, results)
