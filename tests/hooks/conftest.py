"""Fixtures for the hook tests: a whole core in this process (`client`), the hooks' scripts
written into a session's workspace (where its command box shows them), and a real HTTP
receiver on 127.0.0.1 that the server may reach (`--webhook-allow-private`).

Hook scripts are real programs: /bin/sh or /usr/bin/python3 in the command box, with the
event's JSON on stdin, as an operator's would be.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from support.in_process import in_process
from support.receiver import Receiver
from support.webhooks import LOOPBACK
from support.wire import Wire

from blitz.config import Settings
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["EVENTS", "Session", "hook_events", "kinds", "only"]

EVENTS = {
    "turn_start": hk.HOOK_EVENT_TURN_START,
    "pre_tool": hk.HOOK_EVENT_PRE_TOOL,
    "post_tool": hk.HOOK_EVENT_POST_TOOL,
    "turn_end": hk.HOOK_EVENT_TURN_END,
    "notification": hk.HOOK_EVENT_NOTIFICATION,
}


def kinds(events: list[t.TurnEvent]) -> list[str]:
    return [e.WhichOneof("kind") or "" for e in events]


def hook_events(events: list[t.TurnEvent]) -> list[t.HookOutcome]:
    return [e.hook for e in events if e.HasField("hook")]


def only(events: list[t.TurnEvent], kind: str) -> t.TurnEvent:
    """The one event of `kind`."""
    found = [e for e in events if e.HasField(kind)]
    assert len(found) == 1, kinds(events)
    return found[0]


@pytest.fixture
def hook_settings(settings: Settings) -> Settings:
    return replace(settings, webhook_allow_private=LOOPBACK)


@pytest.fixture
async def client(hook_settings: Settings) -> AsyncIterator[Wire]:
    async with in_process(hook_settings) as wire:
        yield wire


@dataclass
class Session:
    """A session of `client`, and its workspace, where its hooks' scripts are written."""

    wire: Wire
    session: s.Session
    workspace: Path

    @property
    def id(self) -> str:
        return self.session.id

    def script(self, name: str, text: str) -> str:
        """Write `text` to `.hooks/NAME` in the workspace; the command that runs it (as the
        box shows the workspace: at its own path)."""
        path = self.workspace / ".hooks" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        runner = "/usr/bin/python3" if name.endswith(".py") else "/bin/sh"
        return f"{runner} {path}"

    def answering(self, name: str, answer: dict[str, Any], *, record: bool = False) -> str:
        """A hook that prints `answer` as its JSON (and, with `record`, keeps what it read
        in `.hooks/NAME.in`, one line per run)."""
        log = str(self.workspace / ".hooks" / f"{name}.in")
        keep = f"open({log!r}, 'a').write(data.strip() + '\\n')\n"
        return self.script(
            name,
            "import sys, json\n"
            "data = sys.stdin.read()\n"
            f"{keep if record else ''}"
            "json.loads(data)\n"
            f"print(json.dumps({answer!r}))\n",
        )

    def read(self, name: str) -> list[dict[str, Any]]:
        """What a recording hook read, run by run."""
        path = self.workspace / ".hooks" / f"{name}.in"
        text = path.read_text() if path.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line]

    async def hook(self, event: str, command: str = "", **fields: Any) -> hk.Hook:
        made = await self.wire.call(
            "CreateHook", hk.CreateHookRequest(event=EVENTS[event], command=command, **fields)
        )
        return made.hook

    async def run(self, text: str, **turn: Any) -> list[t.TurnEvent]:
        return await self.wire.run_all(self.id, text, **turn)


@pytest.fixture
async def session(client: Wire, hook_settings: Settings) -> Session:
    made = await client.create_session()
    return Session(client, made, hook_settings.workspace_root / made.workspace)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as rx:
        yield rx
