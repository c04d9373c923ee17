"""HookService's calls of the asyncio client: `AsyncBlitz` is made of them and its other
calls (`_calls.py`), apart because hooks are one idea of their own (docs/hooks.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from google.protobuf import struct_pb2

from blitz.v1 import hooks_pb2
from blitz_client._calls import Calls
from blitz_client._requests import duration

__all__ = ["HOOK_EVENT_NAMES", "HookCalls", "hook_event"]

HookEventName = Literal["turn_start", "pre_tool", "post_tool", "turn_end", "notification"]

HOOK_EVENT_NAMES: Mapping[str, hooks_pb2.HookEvent] = {
    name.removeprefix("HOOK_EVENT_").lower(): hooks_pb2.HookEvent.Value(name)
    for name in hooks_pb2.HookEvent.keys()
    if hooks_pb2.HookEvent.Value(name) != hooks_pb2.HOOK_EVENT_UNSPECIFIED
}
"""The events a hook runs at, by the names docs/hooks.md gives them: the proto's, as the
server names them too (`HOOK_EVENT_PRE_TOOL` is "pre_tool"). `HookEventName` spells them
for type checkers; a test keeps the two and the server's the same."""


def hook_event(name: str) -> hooks_pb2.HookEvent:
    """A HookEvent by its name ("pre_tool"); ValueError for another."""
    try:
        return HOOK_EVENT_NAMES[name]
    except KeyError:
        raise ValueError(f"event must be one of {', '.join(HOOK_EVENT_NAMES)}") from None


class HookCalls(Calls):
    """The hook calls of `AsyncBlitz`."""

    async def create_hook(
        self,
        event: HookEventName,
        *,
        command: str = "",
        url: str = "",
        tools: Sequence[str] = (),
        commands: Sequence[str] = (),
        paths: Sequence[str] = (),
        time_limit: timedelta | float | None = None,
        fail_open: bool = False,
        description: str = "",
        server_wide: bool = False,
    ) -> hooks_pb2.CreateHookResponse:
        """A hook that runs at `event` in your sessions: a `command` (run in the session's
        command box, in its workspace) or a `url` (POSTed, signed). `tools`, `commands`
        and `paths` (pre_tool and post_tool only) say which actions it runs for;
        `time_limit` (seconds: the hook's `timeout`) bounds each run; `fail_open` lets the
        turn go on when it fails. An HTTP hook's signing `secret` is in the answer, shown
        only there. `server_wide` (admins only): every principal's sessions."""
        request = hooks_pb2.CreateHookRequest(
            event=hook_event(event),
            command=command,
            url=url,
            tools=list(tools),
            commands=list(commands),
            paths=list(paths),
            fail_open=fail_open,
            description=description,
            server_wide=server_wide,
        )
        if time_limit is not None:
            request.timeout.CopyFrom(duration(time_limit))
        result: hooks_pb2.CreateHookResponse = await self._unary("CreateHook", request)
        return result

    async def hooks(self) -> list[hooks_pb2.Hook]:
        """The hooks that run in your sessions, in the order they run (an admin's: every
        hook)."""
        response: hooks_pb2.ListHooksResponse = await self._unary(
            "ListHooks", hooks_pb2.ListHooksRequest()
        )
        return list(response.hooks)

    async def hook(self, hook_id: str) -> hooks_pb2.Hook:
        """One hook."""
        result: hooks_pb2.Hook = await self._unary(
            "GetHook", hooks_pb2.GetHookRequest(hook_id=hook_id)
        )
        return result

    async def update_hook(
        self,
        hook_id: str,
        *,
        command: str | None = None,
        url: str | None = None,
        tools: Sequence[str] | None = None,
        commands: Sequence[str] | None = None,
        paths: Sequence[str] | None = None,
        time_limit: timedelta | float | None = None,
        fail_open: bool | None = None,
        description: str | None = None,
        disabled: bool | None = None,
    ) -> hooks_pb2.Hook:
        """Change what is given, leave the rest; `disabled=True` pauses it. The hook as it
        now is."""
        request = hooks_pb2.UpdateHookRequest(hook_id=hook_id)
        paths_changed = request.update_mask.paths
        for name, value in (
            ("command", command),
            ("url", url),
            ("fail_open", fail_open),
            ("description", description),
            ("disabled", disabled),
        ):
            if value is not None:
                setattr(request, name, value)
                paths_changed.append(name)
        for name, values in (("tools", tools), ("commands", commands), ("paths", paths)):
            if values is not None:
                getattr(request, name).extend(values)
                paths_changed.append(name)
        if time_limit is not None:
            request.timeout.CopyFrom(duration(time_limit))
            paths_changed.append("timeout")
        result: hooks_pb2.Hook = await self._unary("UpdateHook", request)
        return result

    async def delete_hook(self, hook_id: str) -> None:
        """Delete a hook: it runs no more."""
        await self._unary("DeleteHook", hooks_pb2.DeleteHookRequest(hook_id=hook_id))

    async def test_hook(
        self,
        hook_id: str,
        *,
        input: Mapping[str, Any] | None = None,
        session_id: str = "",
    ) -> hooks_pb2.TestHookResponse:
        """Run a hook once now, deciding nothing: with `input` as its JSON (none: a sample
        of its event's), a command hook in `session_id`'s workspace (none: an empty
        folder). Its outcome, exit code or status, and the start of what it wrote."""
        request = hooks_pb2.TestHookRequest(hook_id=hook_id, session_id=session_id)
        if input is not None:
            struct = struct_pb2.Struct()
            struct.update(dict(input))
            request.input.CopyFrom(struct)
        result: hooks_pb2.TestHookResponse = await self._unary("TestHook", request)
        return result
