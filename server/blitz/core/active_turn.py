"""A turn that runs in this process, or is being acted on, and the set of them.

Its `rec` is the durable part (the store's `TurnRecord`); the rest lives only here: the task
driving the agent, why it is being cancelled, the task list the agent set, the prompt of
its first run. A parked turn is not held: `LiveTurns` loads it from the store when someone
acts on it (an answer, a cancel, a deadline), and it is let go again when it parks or ends.
Nothing here acts; `turns.py` drives them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from blitz.errors import BlitzError
from blitz.ports import ImageInput, TurnPolicy
from blitz.store import SessionRecord, Store, TurnRecord, TurnState
from blitz.v1 import turn_pb2 as t

__all__ = ["ActiveTurn", "LiveTurns"]


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

    @property
    def session_id(self) -> str:
        return self.rec.session_id

    @property
    def turn_id(self) -> str:
        return self.rec.turn_id

    @property
    def aside(self) -> bool:
        return self.turn.aside

    def policy(self, *, first: bool) -> TurnPolicy:
        """What the turn allows the agent; images go with its first run only."""
        turn = self.turn
        return TurnPolicy(
            read_only=turn.read_only,
            plan=turn.plan,
            aside=turn.aside,
            fetch_grants=tuple(turn.fetch_grants),
            images=self.images if first else (),
        )


class LiveTurns:
    """The unfinished turns this process holds: main turns by session, asides by both ids
    (a client may choose an aside's turn id, so two sessions may use the same one)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._main: dict[str, ActiveTurn] = {}
        self._asides: dict[tuple[str, str], ActiveTurn] = {}
        # The turns parked here, by ids only: a parked turn holds nothing else in memory.
        self._parked: set[tuple[str, str]] = set()

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
        self._parked.add((active.session_id, active.turn_id))

    def parked(self, session_id: str, turn_id: str) -> None:
        """Count a turn this process found parked (at recovery)."""
        self._parked.add((session_id, turn_id))

    def count(self, state: TurnState) -> int:
        """How many turns are in `state` now (for the metrics): parked ones by their ids."""
        held = sum(1 for active in self.all() if active.rec.state == state)
        return held + len(self._parked) if state == TurnState.PARKED else held

    def asides_of(self, session_id: str) -> list[ActiveTurn]:
        """The session's aside turns running in this process."""
        return [a for a in self._asides.values() if a.session_id == session_id]

    def aside(self, session_id: str, turn_id: str) -> ActiveTurn | None:
        """An aside turn of this process by id (main turns: `main_turn`)."""
        return self._asides.get((session_id, turn_id))

    async def main_turn(self, session: SessionRecord) -> ActiveTurn | None:
        """The session's unfinished main turn, loaded from the store if not held here."""
        if not session.turn_id:
            return None
        active = self._main.get(session.id)
        if active is not None and active.turn_id == session.turn_id:
            return active
        rec = await self._store.get_turn(session.id, session.turn_id)
        if rec is None or rec.state == TurnState.FINISHED:
            return None
        # Another caller may have loaded it while this one waited on the store: one object
        # per turn, so that a cancel and an answer see each other.
        active = self._main.get(session.id)
        if active is not None and active.turn_id == rec.turn_id:
            return active
        active = ActiveTurn(rec=rec, turn=t.Turn.FromString(rec.turn), session=session)
        self._main[session.id] = active
        self._parked.discard((session.id, rec.turn_id))
        return active
