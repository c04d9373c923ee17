"""What carries out a turn: one small interface, and the runners of the built-in kinds.

The turn driver (`turns.py`) admits, holds, parks, resumes, cancels and ends turns; what a
turn *does* is its runner's. A runner says which turns it `claims` and carries one out:
`start` (its first run), `resume` (after a park, with what the people decided and
answered), `take_over` (after the process running it died, where `survives` says a crash
leaves it something to go on with) and `ended` (told of the turn's end, before its
`finished` is written). Each of those returns how the run stopped: `Completed` (the
turn's answer), `Parked` (requests that need a person) or a string (a command's output).
A runner that can go on after its answer (`GoesOn`: the agent's, an ACP agent's) does so
when a turn_end hook asks it to (docs/hooks.md).

The driver knows no runner by name: the assembly hands it an ordered list, and the first
that claims a turn runs it. So a new kind of agent behind a session is a runner and one
line in the assembly. Nothing of a runner's own state lives on `ActiveTurn`: a runner that
needs more keeps it in the store (a workflow run's `RunState`) or in the agent's history.

This module holds the interface and the two simplest runners: the agent's turn (a prompt
to the agent port) and the server's slash commands (`slash_commands.py`). The workflow
runner is `workflow_runs.WorkflowRuns`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.slash_commands import CommandContext, parse_command, run_command
from blitz.errors import BlitzError, Reason
from blitz.paths import PathRefused, Workspace
from blitz.ports import AgentPort, Completed, Parked, Resolution, TurnIO
from blitz.store import SessionRecord, Store, TurnRecord
from blitz.v1 import turn_pb2 as t

__all__ = [
    "AgentRunner",
    "CommandRunner",
    "GoesOn",
    "OpenWorkspace",
    "Outcome",
    "Runners",
    "TurnRunner",
    "open_workspace",
]

log = structlog.get_logger(__name__)

# How one run of a turn stopped: the agent's answer, its requests, or a command's output.
Outcome = Completed | Parked | str
# Opens a session's workspace folder (the driver's, which refuses a folder swapped for a link).
OpenWorkspace = Callable[[SessionRecord], Path]


def open_workspace(root: Path, session: SessionRecord) -> Path:
    """The session's folder, opened by its name without following a link: a folder
    replaced by a link since the session was made is refused, not followed."""
    try:
        return Workspace.named(root, session.workspace).root
    except (OSError, PathRefused):
        raise BlitzError(
            Reason.FILE_NOT_FOUND,
            f"the session's workspace {session.workspace!r} is gone or is not a folder",
            {"path": session.workspace},
        ) from None


class TurnRunner(Protocol):
    """What carries out one kind of turn."""

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        """Whether this runner carries out the turn of `session` (asked in order; the
        first wins)."""
        ...

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        """The turn's first run."""
        ...

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        """A run after a park, with every request's resolution by its id."""
        ...

    async def survives(self, rec: TurnRecord) -> bool:
        """Whether a turn left running by a process that died can go on (`take_over`);
        if not, it ends with SERVER_RESTARTED."""
        ...

    async def take_over(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        """The run of a turn taken over from a process that died while it ran."""
        ...

    async def ended(self, active: ActiveTurn, error: BlitzError | None) -> None:
        """The turn is ending (its `finished` not yet written): settle what is the runner's."""
        ...


@runtime_checkable
class GoesOn(Protocol):
    """A runner whose agent can go on after its answer, in the same turn."""

    async def go_on(
        self, active: ActiveTurn, io: TurnIO, answered: Completed, text: str
    ) -> Outcome:
        """Another run after `answered`, with `text` as the agent's next prompt."""
        ...


class Runners:
    """The runners in the order they are asked: the first that claims a turn runs it."""

    def __init__(self, runners: Sequence[TurnRunner]) -> None:
        if not runners:
            raise ValueError("a turn driver needs at least one runner")
        self._runners = tuple(runners)

    def of(self, turn: t.Turn, session: SessionRecord) -> TurnRunner:
        """The runner of `turn` of `session`: the first that claims it."""
        for runner in self._runners:
            if runner.claims(turn, session):
                return runner
        raise LookupError("no runner claims the turn")  # the assembly's last claims all


class _Ends:
    """For a runner that nothing survives and that has nothing to settle at the end."""

    async def survives(self, rec: TurnRecord) -> bool:
        return False

    async def take_over(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        raise AssertionError("a turn that does not survive a crash is never taken over")

    async def ended(self, active: ActiveTurn, error: BlitzError | None) -> None:
        return None


class CommandRunner(_Ends):
    """The server's slash commands (`/help`, `/usage`, `/compact`…): a turn whose text is a
    command, answered by the server (slash_commands.py). A command that parks is run by a
    runner of its own, asked before this one."""

    def __init__(self, *, store: Store, agent: AgentPort) -> None:
        self._store = store
        self._agent = agent

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        return turn.command

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        name, arg = parse_command(active.turn.text)
        log.info("command_started", command=name)
        session = active.session
        context = CommandContext(
            store=self._store, session_id=session.id, model=session.model, io=io, agent=self._agent
        )
        return await run_command(name, arg, context)

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        raise AssertionError("a slash command never parks")


class AgentRunner(_Ends):
    """A prompt to the agent behind the agent port: every turn no other runner claims.

    Its state between runs is the agent's history, stored with the turn when it parks; a
    turn left running by a dead process has no such point to go on from, and ends.
    """

    def __init__(
        self,
        *,
        store: Store,
        agent: AgentPort,
        open_workspace: OpenWorkspace,
    ) -> None:
        self._store = store
        self._agent = agent
        self._open_workspace = open_workspace

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        return True

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        session = active.session
        workspace = self._open_workspace(session)
        # What the files were before the agent ran, for a rewind or a fork: taken at the
        # turn's first change (TurnIO.before_change), not for a turn that changes nothing.
        active.checkpoint_at_change = True
        log.info("turn_started")
        return await self._agent.start(
            io=io,
            model=session.model,
            workspace=workspace,
            history=await self._store.get_history(session.id),
            prompt=active.prompt,
            policy=active.policy(first=True),
        )

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        session = active.session
        workspace = self._open_workspace(session)
        active.checkpoint_at_change = True
        log.info("turn_resumed")
        assert active.rec.history is not None
        return await self._agent.resume(
            io=io,
            model=session.model,
            workspace=workspace,
            history=active.rec.history,
            results=results,
            policy=active.policy(first=False),
        )

    async def go_on(
        self, active: ActiveTurn, io: TurnIO, answered: Completed, text: str
    ) -> Outcome:
        session = active.session
        log.info("turn_goes_on")
        active.checkpoint_at_change = True
        return await self._agent.start(
            io=io,
            model=session.model,
            workspace=self._open_workspace(session),
            history=answered.history,
            prompt=text,
            policy=active.policy(first=False),
        )
