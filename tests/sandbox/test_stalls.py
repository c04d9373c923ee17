"""No file tool can stall the server: not a fifo.

A call that blocks a worker thread for ever takes that thread from every session.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import OpenSession


async def test_fifos_stall_no_write_and_leave_every_other_write_free(
    open_session: OpenSession,
) -> None:
    """After `mkfifo`, an approved write to the fifo used to block a worker thread for ever;
    eight of them and no file change anywhere on the server could complete."""
    stuck = [await open_session() for _ in range(8)]
    for session in stuck:
        os.mkfifo(session.workspace / "f")
    free = await open_session()

    for tool, args in (
        ("write_file", {"path": "f", "content": "x"}),
        ("read_file", {"path": "f"}),
        ("edit_file", {"path": "f", "old_string": "x", "new_string": "y"}),
    ):
        results = await asyncio.gather(*(s.call(tool, **args) for s in stuck))
        assert all("is a fifo" in r["error"] for r in results), results
    written = await free.call("write_file", path="ok.txt", content="fine\n")
    assert written == {"path": "ok.txt", "bytes": 5}
