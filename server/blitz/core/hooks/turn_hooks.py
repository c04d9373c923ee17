"""Hooks at their points of a turn (docs/hooks.md, "Events"): what the driver, the turn's
channel and the agent's gate ask of them.

`TurnHooks` is built once, by the assembly; for each run of a turn the driver asks it for
the `RunHooks` of that run: the hooks that run in the session (its owner's, the
server-wide ones, the declared ones; those made or changed later run from the next run),
or None when there are none, so a session without hooks pays one read per run.

- turn_start, before the first run's agent starts: context is added to the prompt; a
  block refuses the turn (HOOK_DENIED).
- pre_tool, where an action passes the gate (`TurnIO.pre_tool`): allow, deny, ask or
  rewrite it (pre_tool.py).
- post_tool, on every tool result the channel emits: run beside the agent, awaited before
  its next model call, whose request then carries what they added or flagged. What a run
  that parks did not deliver is queued as steer text, so its resumption delivers it.
- turn_end, when the agent answers: a block makes it go on, with the reason as its next
  prompt, once per turn (the turn's log says whether it went on already, after a park
  or elsewhere).
- notification, once the turn has parked: told, deciding nothing.

Every run is a `hook` event in the turn's log. Nothing here drives a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import structlog
from google.protobuf import json_format

from blitz.core.active_turn import ActiveTurn
from blitz.core.events.event_log import EventLog
from blitz.core.hooks import payloads
from blitz.core.hooks.matching import Target, applies
from blitz.core.hooks.pre_tool import PreToolHooks
from blitz.core.hooks.running import HookRunner, Ran
from blitz.core.hooks.specs import HookSpec
from blitz.core.requests.pending import PendingRequests
from blitz.errors import BlitzError, Reason
from blitz.ports import HookVerdict
from blitz.store import SessionRecord, Store
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t

__all__ = ["HooksOf", "RunHooks", "RunIO", "TurnHooks"]

log = structlog.get_logger(__name__)

# The hooks that run in a principal's sessions, in the order they run.
HooksOf = Callable[[str], Awaitable[list[HookSpec]]]

_DENY = t.HOOK_DECISION_DENY
_CONTINUE = t.HOOK_DECISION_CONTINUE


class RunIO(Protocol):
    """How a run's hooks write to its log: as the run's channel does (its step, its fence)."""

    def emit(self, event: t.TurnEvent) -> None: ...

    async def commit(self, event: t.TurnEvent) -> None: ...


class TurnHooks:
    """The hooks of every turn this process runs."""

    def __init__(
        self,
        *,
        hooks_of: HooksOf,
        runner: HookRunner,
        log: EventLog,
        store: Store,
        pending: PendingRequests,
        open_workspace: Callable[[SessionRecord], Path],
    ) -> None:
        self._hooks_of = hooks_of
        self._runner = runner
        self._log = log
        self._store = store
        self._pending = pending
        self._open_workspace = open_workspace

    async def for_run(self, active: ActiveTurn, io: RunIO) -> RunHooks | None:
        """The hooks of one run of `active` (None: none runs in its session)."""
        specs = [s for s in await self._hooks_of(active.session.owner) if not s.disabled]
        if not specs:
            return None
        return RunHooks(
            active,
            io,
            specs,
            runner=self._runner,
            log=self._log,
            store=self._store,
            pending=self._pending,
            workspace=self._open_workspace(active.session),
        )


class RunHooks:
    """The hooks of one run of one turn."""

    def __init__(
        self,
        active: ActiveTurn,
        io: RunIO,
        specs: list[HookSpec],
        *,
        runner: HookRunner,
        log: EventLog,
        store: Store,
        pending: PendingRequests,
        workspace: Path,
    ) -> None:
        self._active = active
        self._io = io
        self._runner = runner
        self._log = log
        self._store = store
        self._pending = pending
        self._workspace = workspace
        self._specs: dict[int, list[HookSpec]] = {}
        for spec in specs:
            self._specs.setdefault(spec.event, []).append(spec)
        # post_tool: each final tool call's name and arguments by id, until its result.
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        # post_tool hooks running beside the agent, and what they have for the model.
        self._tasks: set[asyncio.Task[None]] = set()
        self._contexts: list[str] = []
        # Whether the turn went on at a turn_end hook's word already (None: not looked).
        self._went_on: bool | None = None
        self._pre_tool = PreToolHooks(
            self._of(hk.HOOK_EVENT_PRE_TOOL),
            run=self._run,
            base=lambda: self._base("pre_tool"),
            emit=io.emit,
            commit=io.commit,
            add_context=lambda text, hook_id: self._contexts.append(_context_note([text], hook_id)),
            pending=pending,
            active=active,
        )

    def _of(self, event: int) -> list[HookSpec]:
        return self._specs.get(event, [])

    def _base(self, event: str) -> payloads.Common:
        active = self._active
        return payloads.common(
            event,
            session_id=active.session_id,
            turn_id=active.turn_id,
            workspace=self._workspace,
            mode=active.mode,
            principal=active.session.owner,
        )

    async def _run(self, spec: HookSpec, payload: dict[str, Any]) -> Ran:
        return await self._runner.run(spec, payload, workspace=self._workspace)

    # turn_start

    async def turn_start(self) -> None:
        """Run the turn_start hooks on the prompt: add their context to it, or refuse the
        turn (HOOK_DENIED)."""
        specs = self._of(hk.HOOK_EVENT_TURN_START)
        if not specs:
            return
        active = self._active
        added: list[str] = []
        for spec in specs:
            ran = await self._run(
                spec, payloads.turn_start(self._base("turn_start"), active.prompt)
            )
            await self._io.commit(t.TurnEvent(hook=ran.outcome))
            if ran.answer.decision == _DENY:
                raise BlitzError(
                    Reason.HOOK_DENIED,
                    ran.answer.reason or f"the hook {spec.id} refused the prompt",
                    {"hook_id": spec.id},
                )
            if ran.answer.context:
                added.append(ran.answer.context)
        if added:
            active.prompt = f"{active.prompt}\n\n{_context_note(added)}"

    # pre_tool

    async def pre_tool(
        self,
        approval: t.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str],
    ) -> HookVerdict | None:
        """What the pre_tool hooks say of the action (pre_tool.py)."""
        return await self._pre_tool.decide(approval, tool_input, rewritable=rewritable)

    # post_tool

    def saw(self, event: t.TurnEvent) -> None:
        """An event of the run as it is emitted: a tool's result starts its post_tool
        hooks, beside the agent (a call's arguments are kept until its result)."""
        if not self._of(hk.HOOK_EVENT_POST_TOOL):
            return
        if event.HasField("tool_call") and not event.tool_call.partial:
            call = event.tool_call
            self._calls[call.id] = (call.name, json_format.MessageToDict(call.args))
        elif event.HasField("tool_result"):
            result = t.ToolResult()
            result.CopyFrom(event.tool_result)
            task = asyncio.get_running_loop().create_task(
                self._post_tool(result), name=f"post-tool-{result.id}"
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _post_tool(self, result: t.ToolResult) -> None:
        try:
            args = await self._arguments(result.id)
            command, path = args.get("command"), args.get("path")
            target = Target(
                result.name,
                command if isinstance(command, str) else None,
                path if isinstance(path, str) else None,
            )
            specs = [s for s in self._of(hk.HOOK_EVENT_POST_TOOL) if applies(s, target)]
            if not specs:
                return
            payload = payloads.post_tool(
                self._base("post_tool"),
                tool=result.name,
                call_id=result.id,
                tool_input=args,
                response=json_format.MessageToDict(result.result),
                is_error=result.is_error,
            )
            for spec in specs:
                ran = await self._run(spec, payload)
                ran.outcome.tool, ran.outcome.tool_call_id = result.name, result.id
                self._io.emit(t.TurnEvent(hook=ran.outcome))
                what = f"the result of {result.name} (call {result.id})"
                if ran.answer.context:
                    self._contexts.append(_context_note([ran.answer.context], spec.id, what))
                if ran.answer.decision == _DENY:
                    self._contexts.append(f"The hook {spec.id} flagged {what}: {ran.answer.reason}")
        except Exception:
            log.exception("post_tool_hooks_failed", tool_call_id=result.id)

    async def _arguments(self, call_id: str) -> dict[str, Any]:
        """A tool call's arguments: as this run saw its call, or, for a call made before the
        turn parked (its result comes in the resumed run), as the turn's log holds it."""
        if call_id in self._calls:
            return self._calls.pop(call_id)[1]
        active = self._active
        found: dict[str, Any] = {}
        after = max(0, (active.rec.first_seq or 1) - 1)
        events = self._log.read(active.session_id, after_seq=after, follow=False)
        try:
            async for event in events:
                call = event.tool_call
                if event.HasField("tool_call") and call.id == call_id and not call.partial:
                    found = json_format.MessageToDict(call.args)
        finally:
            await events.aclose()
        return found

    async def _drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def deliver(self) -> list[str]:
        """Before a model call: once the post_tool hooks running have answered, what the
        hooks have for the model (each once)."""
        await self._drain()
        added, self._contexts = self._contexts, []
        return added

    async def settle(self, *, parked: bool) -> None:
        """At the run's end: wait for the post_tool hooks; what a parked run did not deliver
        waits in the store as steer text for its resumption."""
        await self._drain()
        if parked and self._contexts:
            active = self._active
            for text in self._contexts:
                await self._store.add_steer(active.session_id, active.turn_id, text)
            self._contexts = []
            active.steer_waiting = True

    async def aclose(self) -> None:
        """Stop the post_tool hooks still running (the run ended otherwise)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # turn_end

    async def turn_end(self, output: str) -> str | None:
        """Run the turn_end hooks on the agent's answer: what it goes on with, when one
        blocks and the turn has not gone on at a hook's word before; else None."""
        specs = self._of(hk.HOOK_EVENT_TURN_END)
        if not specs:
            return None
        went_on = await self._went_on_before()
        payload = payloads.turn_end(self._base("turn_end"), output=output, went_on=went_on)
        goes_on: str | None = None
        for spec in specs:
            ran = await self._run(spec, payload)
            outcome = ran.outcome
            if outcome.decision == _CONTINUE:
                if went_on or goes_on is not None:
                    outcome.decision = t.HOOK_DECISION_NONE
                    outcome.reason += " (not acted on: a turn goes on at a hook's word once)"
                else:
                    goes_on = ran.answer.reason or "Go on."
            await self._io.commit(t.TurnEvent(hook=outcome))
        if goes_on is not None:
            self._went_on = True
        return goes_on

    async def _went_on_before(self) -> bool:
        """Whether a turn_end hook made this turn go on already: its log says."""
        if self._went_on is None:
            active = self._active
            self._went_on = False
            after = max(0, (active.rec.first_seq or 1) - 1)
            events = self._log.read(active.session_id, after_seq=after, follow=False)
            try:
                async for event in events:
                    if (
                        event.turn_id == active.turn_id
                        and event.HasField("hook")
                        and event.hook.event == "turn_end"
                        and event.hook.decision == _CONTINUE
                    ):
                        self._went_on = True
                        break
            finally:
                await events.aclose()
        return self._went_on

    # notification

    async def notification(self, requests: list[t.TurnEvent]) -> None:
        """The turn parked on `requests`: tell the notification hooks. The turn is held by
        no one now, so what they answered is written unfenced."""
        specs = self._of(hk.HOOK_EVENT_NOTIFICATION)
        if not specs:
            return
        payload = payloads.notification(self._base("notification"), requests)
        active = self._active
        for spec in specs:
            ran = await self._run(spec, payload)
            event = t.TurnEvent(hook=ran.outcome)
            if active.step is not None:
                event.step.CopyFrom(active.step)
            await self._log.commit(active.session_id, active.turn_id, event)


def _context_note(texts: list[str], hook_id: str = "", what: str = "") -> str:
    """What the model reads of the context hooks added."""
    source = f"the hook {hook_id}" if hook_id else "hooks"
    about = f" about {what}" if what else ""
    return f"Context from {source}{about}:\n" + "\n".join(texts)
