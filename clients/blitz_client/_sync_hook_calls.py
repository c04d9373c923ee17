"""HookService's calls of the blocking client, each `AsyncBlitz`'s (`_hook_calls.py`) run
on the client's loop: `Blitz` is made of them and its own calls (`_sync.py`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from blitz.v1 import hooks_pb2
from blitz_client._blocking import BlockingCalls
from blitz_client._hook_calls import HookEventName

__all__ = ["BlockingHookCalls"]


class BlockingHookCalls(BlockingCalls):
    """The hook calls of `Blitz`."""

    def create_hook(
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
        """A hook, and an HTTP hook's secret, shown once; see `AsyncBlitz.create_hook`."""
        return self._runner.run(
            self._client.create_hook(
                event,
                command=command,
                url=url,
                tools=tools,
                commands=commands,
                paths=paths,
                time_limit=time_limit,
                fail_open=fail_open,
                description=description,
                server_wide=server_wide,
            )
        )

    def hooks(self) -> list[hooks_pb2.Hook]:
        """The hooks that run in your sessions, in the order they run."""
        return self._runner.run(self._client.hooks())

    def hook(self, hook_id: str) -> hooks_pb2.Hook:
        """One hook."""
        return self._runner.run(self._client.hook(hook_id))

    def update_hook(
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
        """Change what is given; see `AsyncBlitz.update_hook`."""
        return self._runner.run(
            self._client.update_hook(
                hook_id,
                command=command,
                url=url,
                tools=tools,
                commands=commands,
                paths=paths,
                time_limit=time_limit,
                fail_open=fail_open,
                description=description,
                disabled=disabled,
            )
        )

    def delete_hook(self, hook_id: str) -> None:
        """Delete a hook."""
        self._runner.run(self._client.delete_hook(hook_id))

    def test_hook(
        self, hook_id: str, *, input: Mapping[str, Any] | None = None, session_id: str = ""
    ) -> hooks_pb2.TestHookResponse:
        """Run a hook once now, deciding nothing; see `AsyncBlitz.test_hook`."""
        return self._runner.run(self._client.test_hook(hook_id, input=input, session_id=session_id))
