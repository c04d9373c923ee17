"""What the tools of one agent run act with: pydantic-ai's `deps` for a Blitz run.

Built by the runner for every run from the Agent's settings and the turn's policy; the
tools read it and nothing else. It holds no connection of its own and must never outlive
the run it was built for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from blitz.agent.tasks import TaskList
from blitz.paths import Workspace
from blitz.ports.agent import TurnIO, TurnPolicy

if TYPE_CHECKING:
    from blitz.agent.delegation import SubAgents

__all__ = ["DEFAULT_COMMAND_ENV", "FetchLimits", "ToolDeps"]

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


@dataclass
class ToolDeps:
    """One run's tool context."""

    io: TurnIO
    workspace: Workspace
    command_timeout: float
    output_cap: int
    command_env: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_COMMAND_ENV))
    policy: TurnPolicy = field(default_factory=TurnPolicy)
    fetch: FetchLimits = field(default_factory=FetchLimits)
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
