"""The turns of a session served by an ACP agent: one more runner on the runner seam.

`AcpRunner` claims every turn of a session whose agent is a declared ACP agent (its
`model` reads `acp:NAME`), but the server's own `/help`, `/usage` and `/tasks`. A turn:
the session's live process (or a new one, its ACP session loaded where the agent can),
the mode set where the `modes` table maps it, `session/prompt`, and then the inbox
consumed until the prompt answers (docs/agents.md, "A turn"): updates mapped to events
(`mapping.TurnMapper`), each request handed to decisions.py, which answers it by the
turn's mode, its read-only flag and the stored rules, or — when a person must decide —
has the turn **park** on an `ApprovalRequest` while the agent's request stays open in the
live process. `resume` answers it with the person's decision and goes on consuming;
after a restart (no live process holds the request) it loads the agent's session and
tells it what was decided, or ends `AGENT_UNAVAILABLE` where the agent cannot load.
`ended` cancels a prompt still running (B11) and answers what is open `cancelled`.
What a prompt's end means (tables S and F) and its usage (U13) are settled here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from blitz.acp.claims import acp_turn, gone
from blitz.acp.client import Ask, Output, Update
from blitz.acp.decisions import answer, decide, restart_answers
from blitz.acp.mapping import TurnMapper, finish_error
from blitz.acp.process import AgentProcess, PromptEnd
from blitz.acp.processes import AgentProcesses
from blitz.acp.state import AcpState
from blitz.config.agents import ACP_MODEL_PREFIX, DeclaredAgent, acp_agent_of
from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.runners import OpenWorkspace, Outcome
from blitz.core.files.checkpoints import Checkpoints
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import (
    ApprovalResult,
    Completed,
    ModelCallUsage,
    Resolution,
    TurnIO,
)
from blitz.store import SessionRecord, Store, TurnRecord
from blitz.v1 import turn_pb2 as t

__all__ = ["AcpRunner"]

log = structlog.get_logger(__name__)

_MODE_NAMES: dict[int, str] = {
    t.SESSION_MODE_ASK: "ask",
    t.SESSION_MODE_ACCEPT_EDITS: "accept_edits",
    t.SESSION_MODE_READ_ONLY: "read_only",
    t.SESSION_MODE_PLAN: "plan",
    t.SESSION_MODE_BYPASS: "bypass",
}
_POLL_S = 1.0
_CANCEL_WAIT_S = 10.0


class AcpRunner:
    """Carries out the turns of sessions served by ACP agents."""

    def __init__(
        self,
        *,
        store: Store,
        processes: AgentProcesses,
        checkpoints: Checkpoints,
        open_workspace: OpenWorkspace,
    ) -> None:
        self._store = store
        self._processes = processes
        self._checkpoints = checkpoints
        self._open_workspace = open_workspace

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        return acp_turn(turn, session)

    def _spec(self, session: SessionRecord) -> DeclaredAgent:
        name = acp_agent_of(session.model)
        spec = self._processes.agents.get(name)
        if spec is None:
            raise gone(name)
        return spec

    # The runner seam

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        if active.aside:
            raise invalid_argument(
                "turn.aside", "an ACP agent has no side conversation: send a turn instead"
            )
        session = active.session
        spec = self._spec(session)
        workspace = self._open_workspace(session)
        await self._checkpoints.take_start(active)
        state = AcpState.load(await self._store.get_history(session.id), spec.name)
        process = self._processes.live(session.id)
        notes: list[str] = []
        if process is None or process.acp_session_id != state.acp_session_id:
            process, loaded = await self._processes.start(
                spec, session.id, workspace, state.acp_session_id
            )
            if state.acp_session_id and not loaded:
                notes.append(
                    "The agent could not take its earlier conversation back (it does not"
                    " load sessions): it starts this turn without its memory."
                )
        state.acp_session_id = process.acp_session_id
        state.load_session = process.load_session
        for note in notes:
            io.emit(t.TurnEvent(notice=t.Notice(text=note)))
        process.busy = True
        process.mapper = TurnMapper(workspace)
        await self._set_mode(process, spec, active, io)
        text = active.prompt
        if active.turn.accepted and not text:
            text = "Carry out the plan you proposed."
        process.prompt([{"type": "text", "text": text}])
        log.info("acp_turn_started", agent=spec.name)
        return await self._consume(active, io, process, state)

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        session = active.session
        spec = self._spec(session)
        state = AcpState.load(active.rec.history, spec.name)
        process = self._processes.live(session.id)
        # `results` holds every resolution of the turn so far: the parked ones are new.
        if process is not None and any(r in process.parked for r in results):
            for request_id in [r for r in process.parked if r in results]:
                ask = process.parked.pop(request_id)
                state.parked.pop(request_id, None)
                resolution = results[request_id]
                allowed = isinstance(resolution, ApprovalResult) and resolution.approved
                await answer(io, process, ask, allowed, resolution)
            return await self._consume(active, io, process, state)
        waited = {r: results[r] for r in state.parked if r in results}
        return await self._after_restart(active, io, spec, state, waited)

    async def go_on(
        self, active: ActiveTurn, io: TurnIO, answered: Completed, text: str
    ) -> Outcome:
        """A turn_end hook asked the agent to go on (docs/hooks.md): one more prompt to
        the process that answered."""
        spec = self._spec(active.session)
        state = AcpState.load(answered.history, spec.name)
        process = self._processes.live(active.session_id)
        if process is None:
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {spec.name!r} stopped before it could go on",
                {"agent": spec.name},
            )
        process.busy = True
        process.mapper = TurnMapper(self._open_workspace(active.session))
        process.prompt([{"type": "text", "text": text}])
        log.info("acp_turn_goes_on", agent=spec.name)
        return await self._consume(active, io, process, state)

    async def survives(self, rec: TurnRecord) -> bool:
        return False  # the prompt in flight died with the process that held it

    async def take_over(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        raise AssertionError("an ACP turn that was running is never taken over")

    async def ended(self, active: ActiveTurn, error: BlitzError | None) -> None:
        process = self._processes.live(active.session_id)
        if process is None:
            return
        if process.prompting:
            if not await process.cancel(wait=_CANCEL_WAIT_S):
                log.warning("acp_cancel_unanswered", agent=process.spec.name)
                await self._processes.drop(active.session_id)
                return
        process.withdraw()
        process.drain()
        await process.release_terminals()
        process.busy = False
        process.mapper = None
        process.approved_paths.clear()
        process.approved_commands.clear()

    # After a restart (docs/agents.md, "Restarts and replicas")

    async def _after_restart(
        self,
        active: ActiveTurn,
        io: TurnIO,
        spec: DeclaredAgent,
        state: AcpState,
        results: Mapping[str, Resolution],
    ) -> Outcome:
        if not state.load_session or not state.acp_session_id:
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {spec.name!r} was stopped while this turn waited, and it cannot"
                " take its session back (it does not offer session/load): the turn ends here",
                {"agent": spec.name},
            )
        workspace = self._open_workspace(active.session)
        process, loaded = await self._processes.start(
            spec, active.session_id, workspace, state.acp_session_id
        )
        if not loaded:
            await self._processes.drop(active.session_id)
            raise BlitzError(
                Reason.AGENT_UNAVAILABLE,
                f"the agent {spec.name!r} could not load its session after a restart",
                {"agent": spec.name},
            )
        process.busy = True
        process.mapper = TurnMapper(workspace)
        told = restart_answers(state, results)
        io.emit(
            t.TurnEvent(
                notice=t.Notice(
                    text="The server restarted while the agent waited: its session was loaded"
                    " and it was told what was decided."
                )
            )
        )
        process.prompt([{"type": "text", "text": told}])
        return await self._consume(active, io, process, state)

    # The consumer

    async def _consume(
        self, active: ActiveTurn, io: TurnIO, process: AgentProcess, state: AcpState
    ) -> Outcome:
        mapper = process.mapper
        assert mapper is not None
        policy = active.policy(first=False)
        while True:
            item = await self._next(process)
            if isinstance(item, Update):
                for event in mapper.events_of(item.update):
                    io.emit(event)
            elif isinstance(item, Output):
                call = mapper.terminal_call(item.terminal_id)
                for event in mapper.terminal_output(call, item.text):
                    io.emit(event)
            elif isinstance(item, Ask):
                parked = await decide(io, process, state, policy, item)
                if parked is not None:
                    return parked
            else:
                return await self._finish(active, io, process, state, item)
            await io.pace()

    async def _next(self, process: AgentProcess) -> Any:
        """The next item of the inbox; a fault when the agent is silent past its deadline
        while Blitz owes it nothing (F4)."""
        while True:
            try:
                return await asyncio.wait_for(process.inbox.get(), _POLL_S)
            except TimeoutError:
                pass
            if process.owed or any(
                term.exit_status() is None for term in process.terminals.values()
            ):
                continue
            if process.silent_for() > process.spec.silence_timeout:
                await self._processes.drop(process.session_id)
                raise BlitzError(
                    Reason.AGENT_TIMEOUT,
                    f"the agent {process.spec.name!r} sent nothing for"
                    f" {process.spec.silence_timeout:g} s" + process.stderr_note(),
                )

    async def _finish(
        self,
        active: ActiveTurn,
        io: TurnIO,
        process: AgentProcess,
        state: AcpState,
        end: PromptEnd,
    ) -> Outcome:
        mapper = process.mapper
        assert mapper is not None
        cancelled = False
        if end.error is not None:
            for event in mapper.close(cancelled=False):
                io.emit(event)
            raise await self._fault(io, process, end.error)
        response = end.response or {}
        stop = str(response.get("stopReason", ""))
        cancelled = stop == "cancelled"
        for event in mapper.close(cancelled=cancelled):
            io.emit(event)
        await self._record_usage(io, process, state, response.get("usage"))
        if mapper.commands is not None:
            state.commands = mapper.commands
        if mapper.title and not active.session.title:
            io.emit(
                t.TurnEvent(notice=t.Notice(text=f"The agent titled the session: {mapper.title}"))
            )
        if active.plan and mapper.tasks:
            active.todo = t.Tasks(items=mapper.tasks)
        error = finish_error(stop, asked_cancel=active.cancel_reason)
        if error is not None:
            raise error
        return Completed(output=mapper.output, history=state.dump())

    async def _fault(self, io: TurnIO, process: AgentProcess, error: BaseException) -> BlitzError:
        """What a failed prompt means (table F, S7), the agent's stderr in a notice."""
        from acp import RequestError

        if isinstance(error, RequestError):
            message = process.spec.name + " answered the prompt with an error: " + str(error)
            return BlitzError(Reason.AGENT_ERROR, message[:600])
        await process.exited(1.0)
        fault = process.fault(error)
        tail = process.stderr_tail()
        io.emit(
            t.TurnEvent(
                notice=t.Notice(
                    text=f"The agent {process.spec.name!r} failed ({fault.reason.wire})"
                    + (":\n" + "\n".join(tail) if tail else ""),
                    error=True,
                )
            )
        )
        await self._processes.drop(process.session_id)
        return BlitzError(fault.reason, fault.message.split("; its stderr")[0], fault.metadata)

    async def _record_usage(
        self, io: TurnIO, process: AgentProcess, state: AcpState, usage: Any
    ) -> None:
        """One ledger entry per prompt (U13): the counts where the agent gave them."""
        mapper = process.mapper
        assert mapper is not None
        cost = 0.0
        if mapper.cost_usd is not None:
            cost = max(mapper.cost_usd - state.cost_seen, 0.0)
            state.cost_seen = mapper.cost_usd
        model = ACP_MODEL_PREFIX + process.spec.name
        if isinstance(usage, Mapping):
            entry = ModelCallUsage(
                model=model,
                input=int(usage.get("inputTokens") or 0),
                cached=int(usage.get("cachedReadTokens") or 0),
                cache_write=int(usage.get("cachedWriteTokens") or 0),
                output=int(usage.get("outputTokens") or 0),
                cost_usd=cost,
                priced=mapper.cost_usd is not None and not mapper.cost_unpriced,
            )
        else:
            entry = ModelCallUsage(
                model=model,
                cost_usd=cost,
                priced=mapper.cost_usd is not None and not mapper.cost_unpriced,
                tokens_unknown=True,
            )
        await io.record_model_call(entry)

    async def _set_mode(
        self, process: AgentProcess, spec: DeclaredAgent, active: ActiveTurn, io: TurnIO
    ) -> None:
        """B12: the agent's mode for the turn's Blitz mode, where the table maps it."""
        name = "plan" if active.plan else _MODE_NAMES.get(active.mode, "ask")
        wanted = spec.modes.get(name)
        current = (process.modes or {}).get("currentModeId")
        if not wanted or wanted == current:
            return
        try:
            await process.set_mode(wanted)
        except Exception as exc:
            io.emit(
                t.TurnEvent(
                    notice=t.Notice(text=f"The agent did not take its mode {wanted!r}: {exc}")
                )
            )
            return
        process.modes = {**(process.modes or {}), "currentModeId": wanted}
