"""The live ACP agent processes of one server process: one per session in use, bounded.

`AgentProcesses` is an `async with` resource of the assembly. It starts a session's agent
when a turn needs it (`start`), finds the live one (`live`), stops those idle past their
agent's `idle_timeout` (a watcher, every few seconds), and keeps at most
`--max-agent-processes` alive: a start past the bound stops the least recently used
idle one, and with none idle it is refused `RATE_LIMITED`. A process in use (its turn
running or parked) is never stopped to make room: a parked turn of an agent without
`session/load` would be lost. Each agent's home is `DATA/agents/NAME/SESSION/home`,
which survives its process (the agent keeps its sessions there) and goes with the
session (`forget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from blitz.acp.process import AgentProcess
from blitz.acp.terminals import TerminalLimits
from blitz.agent.sandbox import CommandLimits, CommandSandbox
from blitz.config.agents import DeclaredAgent
from blitz.errors import BlitzError, Reason

__all__ = ["AgentProcesses"]

log = structlog.get_logger(__name__)

_WATCH_S = 5.0


class AgentProcesses:
    """Every live agent process, by session id."""

    def __init__(
        self,
        *,
        agents: Mapping[str, DeclaredAgent],
        data_dir: Path,
        sandbox: CommandSandbox,
        terminals: TerminalLimits,
        max_processes: int,
    ) -> None:
        self.agents = dict(agents)
        self._homes = data_dir.resolve() / "agents"
        # The agent runs in the commands' box without their per-command limits: a
        # long-lived process (node reserves far more address space than it uses).
        self._sandbox = CommandSandbox(
            isolation=sandbox.isolation, limits=CommandLimits(), box=sandbox.box
        )
        self._terminals = terminals
        self._max = max_processes
        self._live: dict[str, AgentProcess] = {}
        self._starting = asyncio.Lock()
        self._watcher: asyncio.Task[None] | None = None
        # Each agent's version as its last start reported it (ServerInfo.agents).
        self.versions: dict[str, str] = {}

    async def __aenter__(self) -> AgentProcesses:
        if self.agents:
            self._watcher = asyncio.create_task(self._watch(), name="acp-idle-watcher")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        await asyncio.gather(*(p.stop() for p in self._live.values()), return_exceptions=True)
        self._live.clear()

    def home(self, agent: str, session_id: str) -> Path:
        return self._homes / agent / session_id / "home"

    def live(self, session_id: str) -> AgentProcess | None:
        process = self._live.get(session_id)
        if process is not None and not process.alive:
            return None
        return process

    async def start(
        self, spec: DeclaredAgent, session_id: str, workspace: Path, acp_session_id: str
    ) -> tuple[AgentProcess, bool]:
        """A new process for the session, its ACP session loaded where it can be (True)."""
        async with self._starting:
            await self.drop(session_id)
            await self._make_room()
            # Its own binds (its installation) besides what every command is shown.
            box = replace(self._sandbox.box, binds=(*self._sandbox.box.binds, *spec.binds))
            process = AgentProcess(
                spec=spec,
                session_id=session_id,
                workspace=workspace,
                home=self.home(spec.name, session_id),
                sandbox=replace(self._sandbox, box=box),
                terminals=self._terminals,
            )
            self._live[session_id] = process
        try:
            loaded = await process.open(acp_session_id)
        except BaseException:
            self._live.pop(session_id, None)
            await process.stop()
            raise
        self.versions[spec.name] = process.agent_version
        return process, loaded

    async def drop(self, session_id: str) -> None:
        """Stop the session's process, if it has one."""
        process = self._live.pop(session_id, None)
        if process is not None:
            await process.stop()

    async def forget(self, session_id: str) -> None:
        """The session is deleted: its process stopped, its agent's home removed."""
        await self.drop(session_id)
        for agent in self.agents:
            folder = self._homes / agent / session_id
            if folder.is_dir():
                await asyncio.to_thread(shutil.rmtree, folder, True)

    async def _make_room(self) -> None:
        for session_id, process in list(self._live.items()):
            if not process.alive:
                self._live.pop(session_id, None)
                await process.stop()
        if len(self._live) < self._max:
            return
        idle = [p for p in self._live.values() if not p.busy]
        if not idle:
            raise BlitzError(
                Reason.RATE_LIMITED,
                f"all {self._max} agent processes are in use (--max-agent-processes)",
                {"retry_after": "10s"},
            )
        oldest = min(idle, key=lambda p: p.last_used)
        log.info("acp_agent_evicted", agent=oldest.spec.name)
        await self.drop(oldest.session_id)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(_WATCH_S)
            now = time.monotonic()
            for session_id, process in list(self._live.items()):
                idle = not process.busy and now - process.last_used > process.spec.idle_timeout
                if idle or (not process.alive and not process.busy):
                    with contextlib.suppress(Exception):
                        await self.drop(session_id)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"name": a.name, "display_name": a.title, "version": self.versions.get(a.name, "")}
            for a in self.agents.values()
        ]
