"""Test servers: their settings, fixed ports for a restart, a turn parked before a stop.

Every server here has a real SQLite file in the test's folder: `blitz.server.running_server`
on 127.0.0.1 for a client over "grpc" or "connect", or the core alone for a client "core"
in process (`support.in_process`). A "restart" is a second one on the same data directory.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from blitz.config import Settings
from blitz.server import running_server
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from support.in_process import in_process
from support.wire import Wire, open_wire, until

__all__ = [
    "client_url",
    "free_port",
    "make_settings",
    "parked_turn",
    "restartable_settings",
    "serving",
]


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """A test server's settings: any free ports, everything kept under `data_dir`."""
    base = Settings(
        grpc_port=0,
        http_port=0,
        data_dir=data_dir,
        database=str(data_dir / "blitz.db"),
        workspace_root=data_dir / "workspaces",
        repo_dir=data_dir / "repos",
        log_format="console",
        drain_timeout=2.0,
        command_timeout=20.0,
    )
    return replace(base, **overrides)


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (for a server restarted on the same port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def restartable_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings on two ports chosen now, so that a client finds a restarted server again."""
    return make_settings(data_dir, grpc_port=free_port(), http_port=free_port(), **overrides)


def client_url(settings: Settings, kind: str) -> str:
    """The URL a blitz_client uses to reach a server with fixed ports over "grpc" or "connect"."""
    if kind == "grpc":
        return f"127.0.0.1:{settings.grpc_port}"
    return f"http://127.0.0.1:{settings.http_port}"


@asynccontextmanager
async def serving(settings: Settings, kind: str = "core") -> AsyncIterator[Wire]:
    """A server with `settings` and one client of it over `kind` ("core", "grpc", "connect").

    On exit the client closes first, then the server drains and stops.
    """
    if kind == "core":
        async with in_process(settings) as wire:
            yield wire
        return
    async with running_server(settings) as server:
        wire = open_wire(kind, server)
        try:
            yield wire
        finally:
            await wire.close()


async def parked_turn(
    settings: Settings, prompt: str, kind: str = "core"
) -> tuple[s.Session, t.TurnEvent]:
    """A new session whose turn on `prompt` is parked on its first approval request, with
    the server that ran it stopped since: the session and that `approval_request` event."""
    async with serving(settings, kind) as wire:
        session = await wire.create_session()
        stream = wire.run(session.id, prompt)
        try:
            return session, await until(stream, "approval_request")
        finally:
            await stream.aclose()
