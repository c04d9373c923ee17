"""The hook ports (docs/hooks.md): `blitz.v1.HookService` as the transports ask it of the
core, and how the core has a command hook run in a session's command box.

`HookPort` is like the other service ports: each method an RPC in snake_case, the request
message and the call's `CallContext` in, the response message out, failures
`blitz.errors.BlitzError`. `HookCommands` is what the core asks of whatever runs commands
(the agent's command box, `blitz.agent.hook_commands`), which the core may not import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from blitz.ports.session import CallContext
from blitz.v1 import hooks_pb2 as hk

__all__ = ["CommandRun", "HookCommands", "HookPort"]


class HookPort(Protocol):
    """`blitz.v1.HookService`, transport-free (implemented by `blitz.core.HookCore`)."""

    async def create_hook(
        self, req: hk.CreateHookRequest, ctx: CallContext
    ) -> hk.CreateHookResponse: ...
    async def get_hook(self, req: hk.GetHookRequest, ctx: CallContext) -> hk.Hook: ...
    async def list_hooks(
        self, req: hk.ListHooksRequest, ctx: CallContext
    ) -> hk.ListHooksResponse: ...
    async def update_hook(self, req: hk.UpdateHookRequest, ctx: CallContext) -> hk.Hook: ...
    async def delete_hook(
        self, req: hk.DeleteHookRequest, ctx: CallContext
    ) -> hk.DeleteHookResponse: ...
    async def test_hook(self, req: hk.TestHookRequest, ctx: CallContext) -> hk.TestHookResponse: ...


@dataclass(frozen=True)
class CommandRun:
    """How a hook's command ended: its exit code (None: killed at its time limit), and what
    it wrote on stdout and on stderr, each cut to a bound (`cut`: stdout was)."""

    exit_code: int | None
    stdout: str
    stderr: str
    cut: bool = False


class HookCommands(Protocol):
    """Runs a hook's command as the agent's commands run: in the command box, in the
    session's workspace, with no network, its environment scrubbed."""

    async def run(
        self, command: str, *, workspace: Path, stdin: bytes, time_limit: float, event: str
    ) -> CommandRun:
        """Run `command` with /bin/sh in `workspace`, `stdin` its input, killed after
        `time_limit` seconds; `event` is the hook's event, which its environment names.
        OSError when it cannot be started."""
        ...
