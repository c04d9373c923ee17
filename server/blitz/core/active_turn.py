"""A turn that has not finished, as this process holds it while it runs or waits.

Its `rec` is the durable part (the store's `TurnRecord`); the rest lives only here: the task
driving the agent, why it is being cancelled, the task list the agent set, the prompt of
its first run. Nothing here acts; `turns.py` drives it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from blitz.errors import BlitzError
from blitz.ports import ImageInput, TurnPolicy
from blitz.store import SessionRecord, TurnRecord
from blitz.v1 import turn_pb2 as t

__all__ = ["ActiveTurn"]


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
