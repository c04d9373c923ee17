"""What the tools of one agent run act with: pydantic-ai's `deps` for a Blitz run.

`ToolSettings` are the Agent's settings for its tools, the same for every run; `ToolDeps`
is built for every run from them and the turn's policy (subagents.py), and the tools read
it and nothing else. It holds no connection of its own and must never outlive the run it
was built for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from blitz.agent.handoff import SubAgents
from blitz.agent.sandbox import CommandSandbox
from blitz.agent.tasks import TaskList
from blitz.paths import Workspace
from blitz.ports.agent import TurnIO, TurnPolicy

__all__ = ["DEFAULT_COMMAND_ENV", "FetchLimits", "ToolDeps", "ToolSettings"]

# What a command sees of the world: a plain PATH and a UTF-8 locale; HOME is the workspace.
DEFAULT_COMMAND_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}


@dataclass(frozen=True)
class FetchLimits:
    """What fetch_url may do: reach local addresses or not, and how much it downloads."""

    allow_local: bool = False
    max_bytes: int = 2 * 2**20
    timeout: float = 30.0


@dataclass(frozen=True, kw_only=True)
class ToolSettings:
    """What every run's tools act with, from the Agent's settings."""

    # Seconds a `run_command` may take before it is killed.
    command_timeout: float = 120.0
    # Seconds a `search` may spend walking and matching before it stops with what it found.
    search_budget: float = 10.0
    # Bytes of command output (and of a read file or fetched page) kept for the model.
    output_cap: int = 64 * 1024
    # The whole environment commands run with (HOME is always the workspace).
    command_env: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_COMMAND_ENV))
    fetch: FetchLimits = field(default_factory=FetchLimits)
    # What every command runs inside (sandbox.py).
    sandbox: CommandSandbox = field(default_factory=CommandSandbox)


@dataclass
class ToolDeps:
    """One run's tool context."""

    io: TurnIO
    workspace: Workspace
    settings: ToolSettings = field(default_factory=ToolSettings)
    policy: TurnPolicy = field(default_factory=TurnPolicy)
    # Model-facing tool names that users see differently (MCP: `server__tool` is
    # `server.tool`).
    display_names: Mapping[str, str] = field(default_factory=dict)
    # The run's task list; its current task is the `task_id` of approvals and questions.
    tasks: TaskList = field(default_factory=TaskList)
    # Who acts: "" for the main agent, else the sub-agent's name.
    agent: str = ""
    # How `delegate` runs a sub-agent; None where delegating is not allowed (in a sub-agent).
    subagents: SubAgents | None = None

    def display_name(self, tool_name: str) -> str:
        """The tool's name as events and approval requests show it."""
        return self.display_names.get(tool_name, tool_name)
