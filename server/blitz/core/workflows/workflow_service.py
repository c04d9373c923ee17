"""WorkflowService, transport-free: ListWorkflows, GetWorkflow and RunWorkflow.

A run is a turn of the session: RunWorkflow is RunTurn with `command` set and the text
`/run NAME key=value …`, so a run is admitted, queued, cancelled and watched exactly as any
turn is, and the `/run` command (`workflow_runs.py`) does the work. What a session can run
is read from its workspace's `.blitz/workflows/` through the workspace's path gate and from
the operator's --workflows-dir (`blitz.workflows.catalog`), off the event loop.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import struct_pb2

from blitz.core.api import validation as check
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.ports import CallContext
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f
from blitz.workflows import Found, Workflow, resolve, scan, workflows_of

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession
    from blitz.core.workflows.workflow_runs import WorkflowRuns

__all__ = ["RunTurn", "WorkflowCore", "run_text"]

# How a run is started: RunTurn (`SessionCore.run_turn`), with the caller's context.
RunTurn = Callable[[s.RunTurnRequest, CallContext], AsyncIterator[t.TurnEvent]]
# How a run is started and left running (`SessionCore.start_turn`): its turn's id.
StartTurn = Callable[[s.RunTurnRequest, CallContext], Awaitable[str]]

# Turn fields that are the run's own: RunWorkflow refuses them set.
_RUN_OWNED = ("text", "prompt", "command", "plan", "aside", "accepted", "image_ids", "context")


def run_text(name: str, params: dict[str, str]) -> str:
    """The `/run` command text of a run, each value quoted as a shell word."""
    words = [f"{shlex.quote(key)}={shlex.quote(value)}" for key, value in sorted(params.items())]
    return " ".join(["/run", shlex.quote(name), *words])


def _listed(item: Found, *, definition: bool) -> f.Workflow:
    out = f.Workflow(name=item.name, source=item.source, path=item.path)
    if item.error is not None:
        out.error.CopyFrom(item.error.to_proto())
    workflow: Workflow | None = item.workflow
    if workflow is None:
        return out
    out.version, out.title, out.description = workflow.version, workflow.title, workflow.description
    for name, param in workflow.params.items():
        out.params.add(
            name=name,
            type=param.type,
            required=param.required,
            default="" if param.default is None else _text(param.default),
            has_default=param.default is not None,
            description=param.description,
            values=param.values,
        )
    for step in workflow.steps:
        out.steps.add(id=step.id, title=step.title, type=step.type)
    if definition:
        data = struct_pb2.Struct()
        data.update(workflow.model_dump(mode="json", by_alias=True, exclude_defaults=True))
        out.definition.CopyFrom(data)
    return out


def _text(value: str | int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


class WorkflowCore:
    """Every WorkflowService call; sessions are looked up (and owned) as in SessionCore."""

    def __init__(
        self,
        *,
        find_session: FindSession,
        run_turn: RunTurn,
        runs: WorkflowRuns,
        workspace_root: Path,
        workflows_dir: Path | None,
        start_turn: StartTurn | None = None,
    ) -> None:
        """`find_session`: the caller's session (`SessionCore.session_record`);
        `run_turn`: RunTurn, which runs a workflow as the `/run` command turn; `runs`: what
        carries out such a turn (`workflow_runs.py`), asked first whether it can start;
        `workflows_dir`: the operator's folder of workflow files, shared by every
        principal; `start_turn`: a turn started and left running
        (`SessionCore.start_turn`), for `start_workflow`."""
        self._find_session = find_session
        self._run_turn = run_turn
        self._start_turn = start_turn
        self._runs = runs
        self._workspace_root = Path(workspace_root)
        self._dir = workflows_dir

    async def _found(self, session_id: str, ctx: CallContext) -> dict[str, Found]:
        """What a session can run; without one, the server's own (its --workflows-dir)."""
        try:
            if not session_id:
                return await FILE_CALLS.run(scan, None, self._dir)
            session = await self._find_session(session_id, ctx)
            root = self._workspace_root
            return await FILE_CALLS.run(workflows_of, root, session.workspace, self._dir)
        except CallTimedOut:
            raise BlitzError(
                Reason.RATE_LIMITED, "the file system is too slow right now; try again"
            ) from None

    async def list_workflows(
        self, req: f.ListWorkflowsRequest, ctx: CallContext
    ) -> f.ListWorkflowsResponse:
        found = await self._found(req.session_id, ctx)
        return f.ListWorkflowsResponse(
            workflows=[_listed(item, definition=False) for item in found.values()]
        )

    async def get_workflow(self, req: f.GetWorkflowRequest, ctx: CallContext) -> f.Workflow:
        check.require(req.name, "name")
        found = await self._found(req.session_id, ctx)
        resolve(req.name, found)
        return _listed(found[req.name], definition=True)

    def run_workflow(
        self, req: f.RunWorkflowRequest, ctx: CallContext
    ) -> AsyncIterator[t.TurnEvent]:
        return self._run_workflow(req, ctx)

    async def start_workflow(self, req: f.RunWorkflowRequest, ctx: CallContext) -> str:
        """Start a run and leave it running (a schedule's firing): its turn's id. Refused
        as RunWorkflow refuses, and busy as `req.busy` says."""
        if self._start_turn is None:  # pragma: no cover - the assembly always hands it
            raise BlitzError(Reason.INTERNAL, "workflow runs cannot be started here")
        run = await self._prepared(req, ctx)
        return await self._start_turn(run, ctx)

    async def _prepared(self, req: f.RunWorkflowRequest, ctx: CallContext) -> s.RunTurnRequest:
        """The run's `/run` command turn; a broken definition or bad params refused as the
        call's error, before any turn starts (the turn checks them again when it runs: the
        files may change)."""
        check.require(req.session_id, "session_id")
        check.require(req.name, "name")
        for name in _RUN_OWNED:
            if getattr(req.turn, name):
                raise invalid_argument(
                    f"turn.{name}", f"turn.{name} is the run's own; leave it unset"
                )
        turn = t.Turn()
        turn.CopyFrom(req.turn)
        turn.command = True
        turn.text = run_text(req.name, dict(req.params))
        run = s.RunTurnRequest(
            session_id=req.session_id, turn=turn, turn_id=req.turn_id, busy=req.busy
        )
        session = await self._find_session(req.session_id, ctx)
        await self._runs.prepare(session.workspace, req.name, dict(req.params))
        return run

    async def _run_workflow(
        self, req: f.RunWorkflowRequest, ctx: CallContext
    ) -> AsyncIterator[t.TurnEvent]:
        run = await self._prepared(req, ctx)
        events = self._run_turn(run, ctx)
        async with aclosing(events):  # type: ignore[type-var]
            async for event in events:
                yield event
