"""What the main agent and its sub-agents hand each other: the types of a delegation.

The `delegate` tool (delegation.py) asks a `SubAgents` to run a sub-agent; a sub-agent that
parks travels as a `Delegation` inside the parent's parked history (parking.py), and comes
back on resume as a `SubResume`. Only these shapes live here, so that the tools' deps, the
tool, the parking code and the sub-agent runner (subagents.py) can all import them without
importing each other. This module holds data and a protocol; it must never run anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic_core

from blitz.ports.agent import Completed, Parked, Resolution
from blitz.v1 import turn_pb2

__all__ = ["DELEGATE_TOOL", "ID_SEPARATOR", "Delegation", "SubAgents", "SubResume"]

DELEGATE_TOOL = "delegate"
# Between the delegate call's id and the sub-agent's own call id in a request id.
ID_SEPARATOR = "/"


@dataclass
class Delegation:
    """A sub-agent's parked run, as the parent's history keeps it while the turn is parked."""

    agent: str
    # The parent's current task when it delegated: the sub-agent's task when it has none.
    task_id: str
    # The sub-agent's message history (pydantic-ai JSON).
    history: bytes
    # Its open requests as clients see them; in-process only, never stored.
    requests: list[turn_pb2.TurnEvent] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "task_id": self.task_id,
            # Kept as JSON, not a string of it, so the stored history stays readable.
            "history": pydantic_core.from_json(self.history),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Delegation:
        return cls(
            agent=str(data["agent"]),
            task_id=str(data.get("task_id", "")),
            history=pydantic_core.to_json(data["history"]),
        )


@dataclass
class SubResume:
    """What a resumed `delegate` call gets as its `tool_call_metadata`."""

    delegation: Delegation
    # By the sub-agent's own call ids.
    results: dict[str, Resolution]


class SubAgents(Protocol):
    """Runs the sub-agents of one agent run (implemented in subagents.py)."""

    async def hand_over(
        self,
        name: str,
        *,
        call_id: str,
        task_id: str,
        task: str = "",
        resume: SubResume | None = None,
    ) -> Completed | Parked:
        """Start the sub-agent `name` on `task`, or continue its parked run with `resume`.

        A `Parked` outcome's requests are as clients see them (ids, agent, author set).
        """
        ...
