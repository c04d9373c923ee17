"""The turns of the asyncio client: a turn run (from a prompt, a workflow or an accepted
plan), followed or watched, each stream resumed after a drop by the client's `Resumer`
(`_resume.py`) without a duplicate; and the workflows a session can run.
`AsyncBlitz` is made of these and its other calls (`_calls.py`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Unpack

from blitz.v1 import session_pb2, turn_pb2, workflow_pb2
from blitz_client._calls import Calls
from blitz_client._requests import TurnOptions, build_turn, busy_value
from blitz_client._resume import StreamOpener
from blitz_client._transport import Transport

__all__ = ["TurnCalls"]


class TurnCalls(Calls):
    """The turn and workflow calls of `AsyncBlitz`."""

    async def run(
        self,
        session_id: str,
        text: str = "",
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Run one turn; yields its events, the last being `finished`.

        The options are the Turn's fields (`plan`, `read_only`, `timeout`, ... see
        `TurnOptions`). `turn_id` is the idempotency key; one is made up when omitted, so
        that a dropped stream is resumed without starting a second turn. `busy`: what to do
        when the session has a turn already: "reject" (SESSION_BUSY), "enqueue" (wait for
        it, queued) or "interrupt" (cancel it). A failed turn is not an exception: its
        `finished.error` says why. Calls that fail before the turn starts (SESSION_BUSY,
        INVALID_ARGUMENT, ...) raise BlitzError.
        """
        request = session_pb2.RunTurnRequest(
            session_id=session_id,
            turn=build_turn(text, **options),
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
            busy=busy_value(busy),  # type: ignore[arg-type]
        )

        async for event in self._turn("RunTurn", request, session_id, request.turn_id):
            yield event

    async def run_workflow(
        self,
        session_id: str,
        name: str,
        params: Mapping[str, object] | None = None,
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Run the workflow `name` (docs/workflows.md) as one turn; yields its events as
        `run` does, `flow_step` events among them, the last being `finished`. `params` are
        sent as text (True as "true"); the options are the run's turn options (`timeout`,
        `max_cost_usd`, `max_turns`, `mode`, `read_only`, `fetch_grants`). A broken
        definition or bad params raise BlitzError (INVALID_ARGUMENT) before the run starts."""
        given = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (params or {}).items()
        }
        request = workflow_pb2.RunWorkflowRequest(
            session_id=session_id,
            name=name,
            params=given,
            turn=build_turn("", **options),
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
            busy=busy_value(busy),  # type: ignore[arg-type]
        )
        async for event in self._turn("RunWorkflow", request, session_id, request.turn_id):
            yield event

    async def workflows(self, session_id: str) -> list[workflow_pb2.Workflow]:
        """The workflows the session can run, by name; a broken file with its `error`."""
        request = workflow_pb2.ListWorkflowsRequest(session_id=session_id)
        reply = await self._unary("ListWorkflows", request)
        return list(reply.workflows)

    async def workflow(self, session_id: str, name: str) -> workflow_pb2.Workflow:
        """One workflow with its definition; BlitzError (INVALID_ARGUMENT) when broken."""
        request = workflow_pb2.GetWorkflowRequest(session_id=session_id, name=name)
        return await self._unary("GetWorkflow", request)  # type: ignore[no-any-return]

    async def accept_plan(
        self, session_id: str, plan_id: str, text: str = "", *, turn_id: str | None = None
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Carry out the proposed plan `plan_id` (a `plan_proposed` event's): the turn's
        events, as `run` yields them, resumed the same way after a drop. `text` is sent to
        the model after the plan. NO_PENDING_PLAN (a BlitzError) when that plan is not the
        session's open proposal."""
        request = session_pb2.AcceptPlanRequest(
            session_id=session_id,
            plan_id=plan_id,
            text=text,
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
        )
        async for event in self._turn("AcceptPlan", request, session_id, request.turn_id):
            yield event

    async def reject_plan(self, session_id: str, plan_id: str, feedback: str = "") -> None:
        """Reject the proposed plan `plan_id`; the model gets `feedback` with the next turn."""
        request = session_pb2.RejectPlanRequest(
            session_id=session_id, plan_id=plan_id, feedback=feedback
        )
        await self._unary("RejectPlan", request)

    async def follow_turn(
        self, session_id: str, turn_id: str, *, after_seq: int = 0
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The events of one turn with seq > `after_seq`, live, until its `finished`.

        How to pick up a turn that another client started, or one whose `run` was
        abandoned (after a Ctrl-C, say).
        """
        watch = self._watcher(session_id, follow=True)
        async for event in self._resume.events(watch, after_seq=after_seq, turn_id=turn_id):
            yield event

    async def watch(
        self, session_id: str, *, after_seq: int = 0, follow: bool = True
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The session's events with seq > `after_seq`; with `follow`, then live ones.

        Without `follow` it ends after the replay. With it, it runs until the consumer
        stops, resuming across dropped connections.
        """
        watch = self._watcher(session_id, follow=follow)
        async for event in self._resume.events(watch, after_seq=after_seq):
            yield event

    def _turn(
        self, method: str, request: Any, session_id: str, turn_id: str
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The events of the turn that `request` starts (RunTurn, AcceptPlan), resumed."""
        return self._resume.turn(
            lambda t: t.stream(method, request),
            self._watcher(session_id, follow=True),
            turn_id=turn_id,
        )

    def _watcher(self, session_id: str, *, follow: bool) -> StreamOpener:
        """Opens the session's Watch stream after a given seq."""

        def open_stream(t: Transport, after_seq: int) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
            request = session_pb2.WatchRequest(
                session_id=session_id, after_seq=after_seq, follow=follow
            )
            return t.stream("Watch", request)

        return open_stream
