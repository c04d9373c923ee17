"""What the core needs of an agent: the calls it makes, typed (see blitz.agent.contract)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from blitz.agent.contract import Completed, Parked, Resolution, TurnIO, TurnPolicy

__all__ = ["AgentPort"]


class AgentPort(Protocol):
    """Implemented by `blitz.agent.Agent`."""

    def validate_model(self, name: str) -> None:
        """Raise BlitzError(INVALID_ARGUMENT, field `model`) unless the model can be served."""
        ...

    async def start(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes | None,
        prompt: str,
        policy: TurnPolicy = ...,
    ) -> Completed | Parked: ...

    async def resume(
        self,
        *,
        io: TurnIO,
        model: str,
        workspace: Path,
        history: bytes,
        results: dict[str, Resolution],
        policy: TurnPolicy = ...,
    ) -> Completed | Parked: ...

    async def compact(self, *, io: TurnIO, model: str, history: bytes) -> tuple[bytes, str]:
        """Summarise the history with one model call: (shorter history, summary)."""
        ...
