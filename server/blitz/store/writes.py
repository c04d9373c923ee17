"""What a turn writes with its events: the records `Store.append_events` writes in the
transaction that appends them, each only if the turn is still held at its event's fence
(`TurnWrite`). Plain records, as `records.py`'s, which they are made of."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from blitz.store.records import (
    Checkpoint,
    LedgerRow,
    PendingRecord,
    SessionChange,
    TurnRecord,
    TurnState,
)
from blitz.v1.turn_pb2 import TurnEvent

__all__ = [
    "CheckpointWrite",
    "FlowWrite",
    "PendingWrite",
    "SessionUpdate",
    "TurnEnd",
    "TurnStart",
    "TurnUpdate",
    "TurnWrite",
]


@dataclass(frozen=True)
class TurnStart:
    """A turn's start, written in the transaction that appends its `accepted`, before the
    events: the session taken (`claim`, which expects it idle; an aside takes none) and the
    turn's row. When the claim fails, nothing of the turn is written, and it is returned
    with the turns fenced out: the session was not idle."""

    record: TurnRecord
    lease_until: float
    claim: SessionChange | None = None

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def turn_id(self) -> str:
        return self.record.turn_id


@dataclass(frozen=True)
class PendingWrite:
    """A request of a parking turn (`Store.put_pending`), written with an event of its
    turn. `announced`: the request's `approval_request` or `question`, appended in the same
    batch: the row keeps it as stored (numbered). None for one a rule settled."""

    record: PendingRecord
    announced: TurnEvent | None = None

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def turn_id(self) -> str:
        return self.record.turn_id


@dataclass(frozen=True)
class TurnUpdate:
    """The turn's state, counters and history (`Store.update_turn`), written with an event
    of its; its fence is the epoch."""

    session_id: str
    turn_id: str
    epoch: int
    state: TurnState
    first_seq: int
    model_calls: int
    cost_usd: float
    history: bytes | None

    @classmethod
    def of(cls, rec: TurnRecord, state: TurnState | None = None) -> TurnUpdate:
        """The turn as `rec` holds it now, in `state` (rec's own by default)."""
        return cls(
            rec.session_id,
            rec.turn_id,
            rec.epoch,
            state or rec.state,
            rec.first_seq,
            rec.model_calls,
            rec.cost_usd,
            rec.history,
        )


@dataclass(frozen=True)
class SessionUpdate:
    """A change of the session (`Store.update_session`), written with an event of the turn
    `turn_id`."""

    session_id: str
    turn_id: str
    change: SessionChange


@dataclass(frozen=True)
class FlowWrite:
    """A workflow run's state (`blitz.core.workflows.workflow_runs`), written in the
    transaction that appends the step's `flow_step` event (`append_events`), and only if the
    turn is still held at the event's fence: the log and the run's state never disagree on a
    step."""

    session_id: str
    turn_id: str
    state: bytes
    update_time: float


@dataclass(frozen=True)
class CheckpointWrite:
    """A turn's checkpoint and the blobs it names that the session had not stored yet
    (`Store.put_checkpoint`), written with the turn's events."""

    checkpoint: Checkpoint
    blobs: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def session_id(self) -> str:
        return self.checkpoint.session_id

    @property
    def turn_id(self) -> str:
        return self.checkpoint.turn_id


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ends, written in the transaction that appends its `finished`
    (`append_events`): the turn recorded finished (its counters kept, its history let go),
    the history as it left it kept for forks, and its session let go. So no process ever
    finds a session free whose last turn has no `finished`, and none dies in between."""

    session_id: str
    turn_id: str
    # The epoch its holder holds it at: the end is written only if still held at it.
    epoch: int
    model_calls: int
    cost_usd: float
    first_seq: int
    # The session's release (`expect_turn_id` this turn); None for an aside.
    release: SessionChange | None = None
    # Keep the session's history as this turn left it, for a fork at it, among the
    # session's newest this many (0: not at all: an aside).
    keep_history: int = 0
    # The session's history as the turn's answer left it, stored first (None: as it is).
    history: bytes | None = None


# What may be written in the transaction that appends an event of a turn (`append_events`),
# only if the turn is still held at the event's fence: the log and the records never
# disagree, and a turn's step costs one commit.
TurnWrite: TypeAlias = (
    TurnStart
    | TurnEnd
    | FlowWrite
    | PendingWrite
    | TurnUpdate
    | SessionUpdate
    | LedgerRow
    | CheckpointWrite
)
