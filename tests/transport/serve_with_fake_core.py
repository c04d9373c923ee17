"""`blitz serve` exactly as the console script runs it, over FakeCore instead of the real
core, so the CLI's start, signals and drain are tested without the store or a model.

Run as a script: `python serve_with_fake_core.py [serve flags...]`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fake_core import FakeCore

import blitz.server
from blitz.cli import main
from blitz.config import Settings


@asynccontextmanager
async def open_fake_core(settings: Settings) -> AsyncIterator[FakeCore]:
    yield FakeCore()


if __name__ == "__main__":
    blitz.server.open_core = open_fake_core  # type: ignore[assignment]
    sys.exit(main(["serve", *sys.argv[1:]]))
