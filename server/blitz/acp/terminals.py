"""An ACP agent's terminals (`terminal/*`, T2): commands run in Blitz's command box.

A terminal is one command line started by `terminal/create` once it was approved, run by
`run_shell` (the built-in agent's command runner) in the session's workspace, in the
command box, with `--command-timeout` and the output cap, without network. Its output is
kept as it comes (for `terminal/output`) and announced line by line (`on_output`); `wait`
waits for its end, `kill` ends it (its output stays), `release` ends and forgets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blitz.agent.sandbox import CommandSandbox
from blitz.agent.shell import CommandOutcome, run_shell
from blitz.redact import mask_known

__all__ = ["Terminal", "TerminalLimits", "command_line"]


@dataclass(frozen=True)
class TerminalLimits:
    """What bounds every terminal: the server's command settings."""

    sandbox: CommandSandbox
    time_limit: float
    output_cap: int


def command_line(command: str, args: list[str] | None) -> str:
    """The shell line a terminal runs: `command` itself when it has no args (Claude Code
    sends a whole line), else the command and its args quoted for a shell."""
    return shlex.join([command, *args]) if args else command


@dataclass
class Terminal:
    """One running (or ended) terminal command."""

    line: str
    cwd: Path
    env: dict[str, str]
    byte_limit: int
    on_output: Callable[[str], None]
    id: str = field(default_factory=lambda: "term_" + uuid.uuid4().hex[:12])
    _kept: str = ""
    _truncated: bool = False
    _task: asyncio.Task[CommandOutcome] | None = None
    _killed: bool = False

    @classmethod
    def open(
        cls,
        params: Mapping[str, Any],
        *,
        cwd: Path,
        home: Path,
        limits: TerminalLimits,
        heard: Callable[[str, str], None],
    ) -> Terminal:
        """Start an approved `terminal/create` (its params): its env over a bare PATH and
        HOME, its byte limit at most the output cap; `heard(id, text)` for its output."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
        for pair in params.get("env") or []:
            env[str(pair.get("name"))] = str(pair.get("value"))
        limit = params.get("outputByteLimit") or limits.output_cap
        holder: list[Terminal] = []
        terminal = cls(
            line=command_line(params["command"], params.get("args")),
            cwd=cwd,
            env=env,
            byte_limit=min(int(limit), limits.output_cap),
            on_output=lambda text: heard(holder[0].id, text),
        )
        holder.append(terminal)
        terminal.start(limits)
        return terminal

    def start(self, limits: TerminalLimits) -> None:
        async def run() -> CommandOutcome:
            return await run_shell(
                self.line,
                cwd=self.cwd,
                env=self.env,
                time_limit=limits.time_limit,
                output_cap=limits.output_cap,
                on_output=self._heard,
                sandbox=limits.sandbox,
            )

        self._task = asyncio.create_task(run(), name=f"acp-terminal-{self.id}")

    def _heard(self, line: str) -> None:
        text = mask_known(line)
        self._kept += text
        if len(self._kept.encode()) > self.byte_limit:
            # Cut from the start, at a character boundary (the spec's rule).
            data = self._kept.encode()[-self.byte_limit :]
            self._kept = data.decode("utf-8", errors="ignore")
            self._truncated = True
        self.on_output(text)

    def exit_status(self) -> dict[str, object] | None:
        if self._task is None or not self._task.done():
            return None
        if self._task.cancelled() or self._killed:
            return {"exitCode": None, "signal": signal.Signals.SIGKILL.name}
        if self._task.exception() is not None:
            return {"exitCode": None, "signal": None}
        outcome = self._task.result()
        if outcome.timed_out:
            return {"exitCode": None, "signal": signal.Signals.SIGKILL.name}
        return {"exitCode": outcome.exit_code, "signal": None}

    def output(self) -> dict[str, object]:
        shown: dict[str, object] = {"output": self._kept, "truncated": self._truncated}
        status = self.exit_status()
        if status is not None:
            shown["exitStatus"] = status
        return shown

    async def wait(self) -> dict[str, object]:
        assert self._task is not None
        with contextlib.suppress(BaseException):
            await asyncio.shield(self._task)
        status = self.exit_status()
        assert status is not None
        return status

    async def kill(self) -> None:
        if self._task is not None and not self._task.done():
            self._killed = True
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
