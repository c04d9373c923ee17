"""A hook's command, run as the agent's commands run (docs/hooks.md, "Command hooks").

The core may not import the agent, so the assembly hands it this (`blitz.ports.HookCommands`):
/bin/sh in the session's workspace, in the command box the server chose (the same
confinement, rlimits and cgroup as `run_command`), with no network and without write to
the workspace's `.git`, the scrubbed environment commands get (HOME the workspace), plus
`CLAUDE_PROJECT_DIR` (the workspace, as Claude Code's hooks find it) and
`BLITZ_HOOK_EVENT`. The event's JSON is its stdin; its stdout (at most `STDOUT_MAX`
bytes, past which it is cut and the answer refused) and its stderr (`STDERR_MAX`) come
back apart. It is killed at its time limit with everything it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from blitz.agent.deps import DEFAULT_COMMAND_ENV
from blitz.agent.sandbox import CommandSandbox
from blitz.agent.shell import run_shell
from blitz.ports import CommandRun

__all__ = ["STDERR_MAX", "STDOUT_MAX", "BoxedHookCommands"]

# What is kept of a hook's stdout (its answer) and of its stderr (a block's reason).
STDOUT_MAX = 256 * 1024
STDERR_MAX = 16 * 1024


class BoxedHookCommands:
    """`HookCommands` in the command box."""

    def __init__(
        self, *, sandbox: CommandSandbox, env: Mapping[str, str] = DEFAULT_COMMAND_ENV
    ) -> None:
        self._sandbox = sandbox
        self._env = dict(env)

    async def run(
        self, command: str, *, workspace: Path, stdin: bytes, time_limit: float, event: str
    ) -> CommandRun:
        env = {
            **self._env,
            "HOME": str(workspace),
            "CLAUDE_PROJECT_DIR": str(workspace),
            "BLITZ_HOOK_EVENT": event,
        }
        outcome = await run_shell(
            command,
            cwd=workspace,
            env=env,
            time_limit=time_limit,
            output_cap=STDOUT_MAX,
            sandbox=self._sandbox,
            stdin=stdin,
            errors_cap=STDERR_MAX,
        )
        return CommandRun(outcome.exit_code, outcome.output, outcome.errors, outcome.truncated)
