"""Fixtures for the core's own tests: a whole core over a real SQLite file, no sockets.

The core is the server's own wiring (`blitz.server.open_core`) without the transports, and
`direct.Direct` calls it in process as a client on a wire would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from direct import Direct, OpenCore
from wire import make_settings

from blitz.config import Settings
from blitz.server import open_core


@pytest.fixture
def core_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def opened(core_settings: Settings) -> OpenCore:
    """Opens a core on the test's data folder (again after closing: a restart)."""

    @asynccontextmanager
    async def opening(**overrides: Any) -> AsyncIterator[Direct]:
        settings = core_settings
        if overrides:
            from dataclasses import replace

            settings = replace(settings, **overrides)
        async with open_core(settings) as core:
            yield Direct(core)

    return opening


@pytest.fixture
async def direct(opened: OpenCore) -> AsyncIterator[Direct]:
    async with opened() as client:
        yield client
