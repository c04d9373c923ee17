"""Fixtures for the core's own tests: a whole core over a real SQLite file, no sockets.

The core is the server's own wiring (`blitz.assembly.open_core`) without the transports;
`support.in_process` calls it as a client on a wire would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import pytest
from support.in_process import OpenCore, in_process
from support.wire import Wire

from blitz.config import Settings


@pytest.fixture
def opened(settings: Settings) -> OpenCore:
    """Opens a core on the test's data folder (again after closing: a restart), with any
    settings overridden."""

    def opening(**overrides: Any) -> AbstractAsyncContextManager[Wire]:
        return in_process(replace(settings, **overrides))

    return opening


@pytest.fixture
async def direct(opened: OpenCore) -> AsyncIterator[Wire]:
    async with opened() as client:
        yield client
