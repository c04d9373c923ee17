"""Fixtures for the ACP runner's tests: a server whose sessions may be served by the
scripted ACP agent (support/scripted_agent.py), driven by a script per test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.acp_script import AGENT, write_script
from support.in_process import in_process
from support.wire import Wire

from blitz.config import Settings
from blitz.config.agents import DeclaredAgent

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., Path]:
    """`script(**fields)` writes the scripted agent's script (again, between turns)."""
    path = tmp_path / "script" / "script.json"
    path.parent.mkdir(exist_ok=True)

    def write(**fields: Any) -> Path:
        return write_script(path, **fields)

    write(turns=[])
    return write


def scripted(script_path: Path, **fields: Any) -> DeclaredAgent:
    """The scripted agent as an operator would declare it."""
    return DeclaredAgent(
        name=fields.pop("name", "scripted"),
        command=sys.executable,
        args=(str(AGENT), str(script_path)),
        display_name="Scripted",
        binds=(str(ROOT), str(script_path.parent)),
        start_timeout=fields.pop("start_timeout", 20.0),
        **fields,
    )


@pytest.fixture
def acp_settings(settings: Settings, script: Callable[..., Path]) -> Settings:
    """Settings with the scripted agent declared, its processes unconfined (the box's
    own tests declare theirs confined)."""
    path = script(turns=[])
    return replace(
        settings, agents=(scripted(path),), command_isolation="unconfined", approval_timeout=0
    )


@pytest.fixture
def served(acp_settings: Settings) -> Callable[..., AbstractAsyncContextManager[Wire]]:
    """`async with served(**overrides) as wire:` a core with the scripted agent declared."""

    @asynccontextmanager
    async def open_served(**overrides: Any) -> AsyncIterator[Wire]:
        async with in_process(replace(acp_settings, **overrides)) as wire:
            yield wire

    return open_served
