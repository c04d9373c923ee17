"""Which turns are an ACP agent's, and the runner that serves them where no agent is
declared, so that a server without `[agents.NAME]` tables never imports the ACP SDK.

The SDK's schema alone takes about a third of a second to import (docs/benchmarks.md,
"Start"): a server whose configuration declares no agent has no process to speak it
with. A session made while an agent was declared still claims its turns, and they end
AGENT_UNAVAILABLE, as `AcpRunner` ends them when the session's agent is gone.
"""

from __future__ import annotations

from blitz.config.agents import acp_agent_of
from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.runners import Outcome
from blitz.core.driver.slash_commands import parse_command
from blitz.errors import BlitzError, Reason
from blitz.ports import Completed, Resolution, TurnIO
from blitz.store import SessionRecord, TurnRecord
from blitz.v1 import turn_pb2 as t

__all__ = ["NoAgentsDeclared", "acp_turn", "gone"]

# The server's commands an ACP session keeps; any other `/name` goes to the agent (U10).
_SERVER_COMMANDS = frozenset({"help", "usage", "tasks"})


def acp_turn(turn: t.Turn, session: SessionRecord) -> bool:
    """Whether an ACP agent carries out `turn`: its session is an ACP agent's, and the
    turn is not one of the server's own commands."""
    if not acp_agent_of(session.model):
        return False
    return not (turn.command and parse_command(turn.text)[0] in _SERVER_COMMANDS)


def gone(name: str) -> BlitzError:
    """How a turn ends whose session's agent this server declares no more."""
    return BlitzError(
        Reason.AGENT_UNAVAILABLE,
        f"the session's agent {name!r} is no longer declared on this server",
        {"agent": name},
    )


class NoAgentsDeclared:
    """The runner of ACP sessions' turns on a server that declares no agent."""

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        return acp_turn(turn, session)

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        raise gone(acp_agent_of(active.session.model))

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        raise gone(acp_agent_of(active.session.model))

    async def go_on(
        self, active: ActiveTurn, io: TurnIO, answered: Completed, text: str
    ) -> Outcome:
        raise gone(acp_agent_of(active.session.model))

    async def survives(self, rec: TurnRecord) -> bool:
        return False  # the prompt in flight died with the process that held it

    async def take_over(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        raise AssertionError("an ACP turn that was running is never taken over")

    async def ended(self, active: ActiveTurn, error: BlitzError | None) -> None:
        return None
