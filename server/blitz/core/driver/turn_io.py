"""The agent's view of one turn run: `blitz.ports.TurnIO`, implemented by the core.

Each of its calls but `emit` is a step where the agent's work gives way to the calls
people wait on (interactions.py); the agent holds no lock of the core's when it makes one.

Events go to the event log (which stamps, masks, stores and sends them); every model call
is checked against the turn's limits first (MAX_TURNS, BUDGET_EXCEEDED) and hands over
steer text queued in the store, and is recorded in the usage ledger after, with the
`usage` event that announces it (one per call, in one transaction); an approval a stored
rule covers goes ahead at once. Where the session has hooks (`hooks`, the run's
`RunHooks`), an action is shown to its pre_tool hooks, every tool result starts its
post_tool hooks, and a model call first takes what they added for the model, as steer
text is taken. It must never make a decision of its own beyond the turn's limits: rules
belong to `pending.py`, hooks to `core/hooks/`, the event pipeline to `event_log.py`.
Each recorded call is counted in the metrics too: its time since the check before it,
tokens and cost.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict
from typing import Any

from blitz import metrics
from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.interactions import Interactions
from blitz.core.events.event_log import EventLog
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.hooks.turn_hooks import RunHooks
from blitz.core.requests.pending import PendingRequests
from blitz.errors import BlitzError, Reason
from blitz.ports import AnswerResult, HookVerdict, ModelCallUsage, RuleDecision
from blitz.store import FileOriginal, LedgerRow, Store, TurnWrite
from blitz.v1 import turn_pb2 as t

__all__ = ["TurnChannel", "call_usage"]

# A streaming turn gives way (interactions.py) after this many stream events: one turn's
# long stream never holds up the rest, and its events do not pay for a step each.
_YIELD_EVERY = 8

# When the current model call was let through. A context variable, not a field: sub-agents
# of one turn share its channel and call their models at the same time, each in its own task.
_call_started: ContextVar[float | None] = ContextVar("blitz_model_call_started", default=None)


class TurnChannel:
    """`TurnIO` for one run of one turn."""

    def __init__(
        self,
        active: ActiveTurn,
        *,
        log: EventLog,
        store: Store,
        pending: PendingRequests,
        checkpoints: Checkpoints,
        interactions: Interactions,
        default_max_turns: int,
    ) -> None:
        self._active = active
        self._sid = active.session_id
        self._tid = active.turn_id
        self._log = log
        self._store = store
        self._pending = pending
        self._checkpoints = checkpoints
        self._give_way = interactions.give_way
        self._default_max_turns = default_max_turns
        self._paced = 0
        # The hooks of this run (None: the session has none), set by the driver.
        self.hooks: RunHooks | None = None

    def emit(self, event: t.TurnEvent, *, writes: Sequence[TurnWrite] = ()) -> None:
        if event.HasField("tasks") and not event.author:  # a sub-agent's list is its own
            self._active.todo = t.Tasks(items=event.tasks.items)
        elif event.HasField("tool_call"):
            self._active.acted = True  # its files may change: its end is checkpointed
        if self._active.step is not None:
            event.step.CopyFrom(self._active.step)
        self._log.emit(self._sid, self._tid, event, fence=self._active.rec.epoch, writes=writes)
        if self.hooks is not None:
            self.hooks.saw(event)

    async def commit(self, event: t.TurnEvent) -> None:
        await self._give_way()
        if event.HasField("tool_call"):
            self._active.acted = True
        if self._active.step is not None:
            event.step.CopyFrom(self._active.step)
        await self._log.commit(self._sid, self._tid, event, fence=self._active.rec.epoch)

    async def pace(self) -> None:
        # One stream event is microseconds of work: the stream gives way every few.
        self._paced += 1
        if self._paced >= _YIELD_EVERY:
            self._paced = 0
            await self._give_way()
        await self._log.pace(self._sid)

    async def before_change(self) -> None:
        await self._checkpoints.at_change(self._active)

    async def before_file_change(self, path: str, content: bytes | None) -> None:
        await self._give_way()
        await self._checkpoints.at_change(self._active)
        await self._store.keep_original(FileOriginal(self._sid, path, content))

    async def ask_now(self, question: t.Question) -> AnswerResult:
        await self._give_way()
        return await self._pending.ask_now(self._active, question)

    async def rule_decides(self, approval: t.ApprovalRequest) -> RuleDecision | None:
        await self._give_way()
        return await self._pending.decide_by_rule(self._active, approval)

    async def pre_tool(
        self,
        approval: t.ApprovalRequest,
        tool_input: Mapping[str, Any],
        *,
        rewritable: frozenset[str] = frozenset(),
    ) -> HookVerdict | None:
        if self.hooks is None:
            return None
        await self._give_way()
        return await self.hooks.pre_tool(approval, tool_input, rewritable=rewritable)

    async def before_model_call(self) -> list[str]:
        await self._give_way()
        rec, turn = self._active.rec, self._active.turn
        limit = turn.max_turns or self._default_max_turns
        if rec.model_calls >= limit:
            raise BlitzError(
                Reason.MAX_TURNS,
                f"the turn reached its limit of {limit} model calls",
                {"max_turns": str(limit)},
            )
        cap = turn.max_cost_usd
        if cap > 0 and rec.cost_usd >= cap:
            raise BlitzError(
                Reason.BUDGET_EXCEEDED,
                f"the turn reached its cost cap of ${cap:.4f}",
                {"max_cost_usd": repr(cap), "cost_usd": repr(rec.cost_usd)},
            )
        rec.model_calls += 1
        steer: list[str] = []
        if self._active.steer_waiting:
            # Queued in the store (by any process); taken once, so each is sent once.
            self._active.steer_waiting = False
            steer = await self._store.take_steer(self._sid, self._tid)
        if self.hooks is not None:
            steer.extend(await self.hooks.deliver())
        _call_started.set(time.perf_counter())
        return steer

    async def record_model_call(self, usage: ModelCallUsage) -> None:
        await self._give_way()
        started = _call_started.get()
        seconds = None if started is None else time.perf_counter() - started
        self._active.rec.cost_usd += usage.cost_usd
        # The ledger's row is written with the call's `usage` event: one transaction.
        row = LedgerRow(session_id=self._sid, turn_id=self._tid, time=time.time(), **asdict(usage))
        self.emit(t.TurnEvent(usage=call_usage(usage)), writes=(row,))
        tokens = {
            "input": usage.input,
            "cached": usage.cached,
            "cache_write": usage.cache_write,
            "output": usage.output,
        }
        metrics.model_call(usage.model, seconds, tokens, usage.cost_usd)


def call_usage(usage: ModelCallUsage) -> t.Usage:
    """One model call as the protocol's `Usage` (calls 1; its prompt is `last_prompt`)."""
    return t.Usage(
        calls=1,
        model=usage.model,
        input=usage.input,
        cached=usage.cached,
        cache_write=usage.cache_write,
        output=usage.output,
        last_prompt=usage.input,
        cost_usd=usage.cost_usd,
        priced=usage.priced,
        search_queries=usage.search_queries,
        search_cost_usd=usage.search_cost_usd,
        tokens_unknown=usage.tokens_unknown,
    )
