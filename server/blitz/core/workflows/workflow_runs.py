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

This module is the runner: it reads the state (or prepares it), builds the `StepContext`
an advance's executors are handed, applies the workflow's limits to the turn and lets the
step loop (`step_loop.py`) go on from where the state says. Each step type has its executor
(`steps/`): `prompt` is one agent run on the session's conversation; `command` is one
run_command call made by the built-in scripted model (the agent's own tool, so the COMMAND
approval, the rules and the box are those of any command); `approval` parks on a question
(or, `of: STEP`, on accepting that plan step's output, a rejection asking for feedback and
sending the run back to the plan step); `workflow` runs another workflow in a nested frame.

Templates are rendered off the event loop, each within the run's `TemplateBudget`; one that
goes past it fails its step with INVALID_ARGUMENT naming the file, the field, the step and
the limit, and is not retried (the same template fails the same way again).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.runners import OpenWorkspace
from blitz.core.events.event_log import EventLog
from blitz.core.workflows.step_context import StepContext, new_run
from blitz.core.workflows.step_loop import StepLoop
from blitz.core.workflows.workflow_state import Frame, RunState, StepStatus, flow_event, parse_run
from blitz.errors import BlitzError
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.ports import AgentPort, Completed, Parked, Resolution, TurnIO
from blitz.store import FlowWrite, SessionRecord, Store, TurnRecord
from blitz.v1 import turn_pb2 as t
from blitz.workflows import TemplateBudget, Workflow, bind_params, resolve, workflows_of
from blitz.workflows.catalog import file_of
from blitz.workflows.definitions import Limits, PromptStep, SubWorkflowStep

__all__ = ["WorkflowRuns"]

log = structlog.get_logger(__name__)

# The slash command whose turns are workflow runs.
_COMMAND = "/run"


def _apply_limits(turn: t.Turn, limits: Limits) -> None:
    """The workflow's `limits` on top of the turn's own: the turn's counters (model
    calls, cost) cover every step of the run, so the tighter cap bounds them all."""
    if limits.max_cost_usd is not None and not 0 < turn.max_cost_usd <= limits.max_cost_usd:
        turn.max_cost_usd = limits.max_cost_usd
    if limits.max_turns is not None and not 0 < turn.max_turns <= limits.max_turns:
        turn.max_turns = limits.max_turns


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

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
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
            definitions=definitions, root=Frame(name=name, run=new_run(), params=params)
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
        definitions = {
            name: Workflow.model_validate(raw) for name, raw in state.definitions.items()
        }
        _apply_limits(active.turn, definitions[state.root.name].limits)
        ctx = StepContext(
            store=self._store,
            log=self._log,
            agent=self._agent,
            active=active,
            io=io,
            workspace=workspace,
            budget=self.template_budget,
            state=state,
            definitions=definitions,
            file_of=self.file_of,
        )
        return await StepLoop(ctx, restarted=restarted).run(results)

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
            step = workflow.steps[each.index]
            event = flow_event(workflow, each, step, StepStatus.CANCELLED, "", error)
            flow = FlowWrite(sid, tid, state.dump(), time.time())
            await self._log.commit(sid, tid, event, fence=active.rec.epoch, writes=(flow,))
