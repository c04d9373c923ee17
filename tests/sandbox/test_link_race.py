"""A folder swapped for a link while approved file calls run: nothing lands outside.

A thread swaps a workspace folder `d` with a link to the outside folder as fast as it can
(renameat2's RENAME_EXCHANGE, so `d` is always one or the other). Meanwhile a turn reads,
searches, lists, writes, edits and deletes `d/secret.txt` over and over, every action
approved, and a client reads and lists it. A path checked while `d` was a folder and opened
after it became the link would reach the outside folder: none may.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from google.protobuf import json_format
from support.wire import decide, drive

from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w
from blitz_client import BlitzError

if TYPE_CHECKING:
    from conftest import Outside, Session

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)

DECOY = "the decoy\n"
ROUNDS = 8


def _exchange(a: Path, b: Path) -> None:
    if _libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _round(i: int) -> list[str]:
    calls = [
        ("write_file", {"path": "d/secret.txt", "content": f"{DECOY}round {i}\n"}),
        ("read_file", {"path": "d/secret.txt"}),
        ("search", {"pattern": "the", "path": "d"}),
        ("list_files", {"path": "d"}),
        ("edit_file", {"path": "d/secret.txt", "old_string": "the ", "new_string": "a "}),
        ("delete_file", {"path": "d/secret.txt"}),
    ]
    return [f"call {tool} {json.dumps(args)}" for tool, args in calls]


async def test_a_folder_swapped_for_a_link_during_approved_writes_lets_none_land_outside(
    session: Session, outside: Outside
) -> None:
    ws = session.workspace
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text(DECOY)
    (ws / "l").symlink_to(outside.folder)
    try:
        _exchange(ws / "d", ws / "l")
        _exchange(ws / "d", ws / "l")
    except OSError as exc:
        pytest.skip(f"renameat2(RENAME_EXCHANGE) is not available here: {exc}")

    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            _exchange(ws / "d", ws / "l")

    async def client_reads() -> list[str]:
        seen = []
        while not stop.is_set():
            for method, request in (
                ("ReadFile", w.ReadFileRequest(session_id=session.id, path="d/secret.txt")),
                ("ListFiles", w.ListFilesRequest(session_id=session.id, path="d")),
            ):
                try:
                    seen.append(str(await session.wire.call(method, request)))
                except BlitzError as exc:
                    seen.append(exc.reason)
            await asyncio.sleep(0)
        return seen

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    reader = asyncio.create_task(client_reads())
    try:
        prompt = "\n".join(line for i in range(ROUNDS) for line in _round(i))
        events = await drive(
            session.wire,
            session.id,
            prompt,
            decide(session.wire, session.id, t.DECISION_SESSION),
            max_turns=ROUNDS * 6 + 5,
        )
    finally:
        stop.set()
        swapper.join()
        seen = await reader

    results = [
        json_format.MessageToDict(e.tool_result.result) for e in events if e.HasField("tool_result")
    ]
    assert len(results) == ROUNDS * 6, events[-1]
    assert not events[-1].finished.HasField("error")
    assert outside.untouched(), "a file call reached the outside folder"
    assert "the secret" not in json.dumps(results)
    assert not any("the secret" in s for s in seen)
    # The race was real: some calls saw the folder, some the link.
    assert any("error" not in r for r in results)
