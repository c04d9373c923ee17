"""A turn that runs in this process, or is being acted on, and the set of them.

Its `rec` is the durable part (the store's `TurnRecord`, with the epoch this process holds
it at); the rest lives only here: the task driving the agent, why it is being cancelled,
the task list the agent set, the prompt of its first run, whether it called a tool. A
parked turn is not held: the process that takes it (to resume it, cancel it, end it at its
deadline) loads it from the store, and lets it go again when it parks or ends. Nothing here
acts; `turns.py` drives them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from blitz.errors import BlitzError
from blitz.ports import ImageInput, TurnPolicy
from blitz.store import SessionRecord, TurnRecord, TurnState
from blitz.v1 import turn_pb2 as t

__all__ = ["ActiveTurn", "LiveTurns"]

# The action kinds a mode approves without asking.
_APPROVED_BY_MODE: dict[int, frozenset[int]] = {
    t.SESSION_MODE_ACCEPT_EDITS: frozenset({t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE}),
    t.SESSION_MODE_BYPASS: frozenset(
        {t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE, t.ACTION_KIND_COMMAND,
         t.ACTION_KIND_NETWORK, t.ACTION_KIND_MCP}
    ),
}  # fmt: skip


@dataclass
class ActiveTurn:
    """A turn of this process that has not finished."""

    rec: TurnRecord
    turn: t.Turn
    session: SessionRecord
    # The task driving the agent while the turn runs here; None while parked.
    task: asyncio.Task[None] | None = None
    # Why the task was cancelled, reported in `finished.error`.
    cancel_reason: BlitzError | None = None
    # The agent's task list (its todo items) as it last set it in this turn.
    todo: t.Tasks | None = None
    # The model's prompt and attached images, for the first run only.
    prompt: str = ""
    images: tuple[ImageInput, ...] = ()
    # Steer text may wait in the store: the next model call takes it.
    steer_waiting: bool = False
    # Another process took the turn over: this one writes nothing more of it.
    lost: bool = False
    # The agent called a tool (its files may have changed): its end gets a checkpoint of
    # its own (checkpoints.py). A turn taken from the store (resumed, taken over) may
    # have called one before, and counts as having.
    acted: bool = False
    # The turn's start checkpoint is taken at its first change (checkpoints.py,
    # `at_change`), not at its start: set by the runner whose agent says when it changes
    # something (the built-in agent). `start_taken`: whether it is taken (None: not known
    # here, for a turn taken from the store; the store says).
    checkpoint_at_change: bool = False
    start_taken: bool | None = False
    # The session's history as the agent's answer left it: written with the turn's end.
    history: bytes | None = None
    # A notice about the turn's checkpoints was sent: one per turn is enough.
    checkpoint_noticed: bool = False
    # When this process took the turn (time.monotonic()).
    held_since: float = field(default_factory=time.monotonic)
    # The step whose work runs now, where the turn's runner has steps (a workflow run's):
    # every event of it carries it in its envelope (TurnEvent.step), so that a client can
    # group a step's events.
    step: t.FlowStepRef | None = None

    @property
    def session_id(self) -> str:
        return self.rec.session_id

    @property
    def turn_id(self) -> str:
        return self.rec.turn_id

    @property
    def aside(self) -> bool:
        return self.turn.aside

    @property
    def mode(self) -> int:
        """The turn's mode (a blitz.v1.SessionMode): its own, else its session's. The turn
        that carries out an accepted plan does not plan again: in a session in plan mode it
        runs in ask mode (the session stays in plan mode for the next prompt)."""
        mode = self.turn.mode or self.session.mode or t.SESSION_MODE_ASK
        if self.turn.accepted and mode == t.SESSION_MODE_PLAN:
            return t.SESSION_MODE_ASK
        return mode

    @property
    def plan(self) -> bool:
        """Whether the turn only plans: asked so, or in a session in plan mode; never the
        turn that carries out an accepted plan."""
        return not self.turn.accepted and (self.turn.plan or self.mode == t.SESSION_MODE_PLAN)

    def policy(self, *, first: bool) -> TurnPolicy:
        """What the turn allows the agent, its mode's say included; images go with its
        first run only."""
        turn, mode = self.turn, self.mode
        read_only = turn.read_only
        if mode == t.SESSION_MODE_READ_ONLY and not read_only:
            read_only = "the session is in read-only mode: nothing may be written or run"
        return TurnPolicy(
            read_only=read_only,
            plan=self.plan,
            aside=turn.aside,
            fetch_grants=tuple(turn.fetch_grants),
            images=self.images if first else (),
            approved_kinds=_APPROVED_BY_MODE.get(mode, frozenset()),
            mode=t.SessionMode.Name(mode).removeprefix("SESSION_MODE_").lower(),
        )


class LiveTurns:
    """The unfinished turns this process holds: main turns by session, asides by both ids
    (a client may choose an aside's turn id, so two sessions may use the same one)."""

    def __init__(self, *, count_parked: bool = True) -> None:
        self._main: dict[str, ActiveTurn] = {}
        self._asides: dict[tuple[str, str], ActiveTurn] = {}
        # The turns parked here, by ids only: a parked turn holds nothing else in memory.
        # Where processes share the store, any of them may resume a turn parked here, so
        # they are counted in the store instead (`parked_count`, kept by the leases).
        self._count_parked = count_parked
        self._parked: set[tuple[str, str]] = set()
        self.parked_count = 0

    def add(self, active: ActiveTurn) -> None:
        self._parked.discard((active.session_id, active.turn_id))
        if active.aside:
            self._asides[active.session_id, active.turn_id] = active
        else:
            self._main[active.session_id] = active

    def discard(self, active: ActiveTurn) -> None:
        self._parked.discard((active.session_id, active.turn_id))
        if active.aside:
            self._asides.pop((active.session_id, active.turn_id), None)
        elif self._main.get(active.session_id) is active:
            del self._main[active.session_id]

    def all(self) -> list[ActiveTurn]:
        return [*self._main.values(), *self._asides.values()]

    def park(self, active: ActiveTurn) -> None:
        """Let a turn that has parked go: only its ids are remembered, to count it."""
        self.discard(active)
        self.parked(active.session_id, active.turn_id)

    def parked(self, session_id: str, turn_id: str) -> None:
        """Count a turn this process found parked (at recovery)."""
        if self._count_parked:
            self._parked.add((session_id, turn_id))

    def count(self, state: TurnState) -> int:
        """How many turns are in `state` now (for the metrics): parked ones by their ids."""
        if state == TurnState.PARKED:
            return len(self._parked) if self._count_parked else self.parked_count
        return sum(1 for active in self.all() if active.rec.state == state)

    def asides_of(self, session_id: str) -> list[ActiveTurn]:
        """The session's aside turns running in this process."""
        return [a for a in self._asides.values() if a.session_id == session_id]

    def held(self, session_id: str, turn_id: str) -> ActiveTurn | None:
        """The turn, if this process holds it (a main turn or an aside)."""
        active = self._asides.get((session_id, turn_id)) or self._main.get(session_id)
        return active if active is not None and active.turn_id == turn_id else None
