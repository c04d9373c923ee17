"""What an approval request shows is bounded: diffs, details and scope labels.

A request is embedded in every ListSessions and GetSession of its session and streamed to
every watcher, so one built from a huge file or command must stay small, say what it left
out, and be built without stalling the event loop.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from blitz.agent.diffs import unified_diff
from blitz.ports import ApprovalResult, Resolution
from blitz.size_limits import DETAIL_MAX, DIFF_MAX, SCOPE_LABEL_MAX
from blitz.v1 import turn_pb2

if TYPE_CHECKING:
    from conftest import Driver, RecordingIO


def deny(request: turn_pb2.TurnEvent) -> Resolution:
    return ApprovalResult(approved=False, reason="no")


async def test_deleting_a_30_mb_file_asks_with_a_summary_not_a_30_mb_diff(
    driver: Driver, io: RecordingIO
) -> None:
    (driver.workspace / "big.log").write_text("a line of the log\n" * 1_700_000)
    started = time.perf_counter()
    await driver.run("delete big.log", io=io, decide=deny)
    took = time.perf_counter() - started
    request = driver.parks[0].requests[0].approval_request
    assert len(request.diff) < 1000
    assert request.diff.splitlines() == [
        "--- a/big.log",
        "+++ /dev/null",
        "# diff of 29.2 MB not shown: all 1,700,000 lines of the file would be removed; "
        "read the file with WorkspaceService.ReadFile before approving",
    ]
    assert took < 3, "reading the file is the most it costs"
    assert (driver.workspace / "big.log").exists()


def test_a_15_mb_change_is_summarised_without_running_difflib() -> None:
    """What stalled the event loop for 6 s: difflib over two large, different files."""
    old = "".join(f"old {i}\n" for i in range(800_000))
    new = "".join(f"new {i}\n" for i in range(800_000))
    started = time.perf_counter()
    diff = unified_diff(old, new, "x.txt")
    assert time.perf_counter() - started < 0.5
    assert "the file's 800,000 lines would become 800,000" in diff


def test_a_small_edit_in_a_large_file_is_shown_with_its_real_line_numbers() -> None:
    old = "".join(f"{i}\n" for i in range(200_000))
    new = old.replace("\n150000\n", "\nchanged\n")
    started = time.perf_counter()
    diff = unified_diff(old, new, "n.txt")
    assert time.perf_counter() - started < 1
    assert diff.splitlines() == [
        "--- a/n.txt",
        "+++ b/n.txt",
        "@@ -149998,7 +149998,7 @@",
        " 149997",
        " 149998",
        " 149999",
        "-150000",
        "+changed",
        " 150001",
        " 150002",
        " 150003",
    ]


def test_a_diff_past_its_limit_keeps_its_start_and_says_what_is_left_out() -> None:
    old = "".join(f"{i} {'x' * 100}\n" for i in range(4000))
    diff = unified_diff(old, old.replace("x", "y"), "wide.txt")
    assert len(diff) <= DIFF_MAX
    assert diff.startswith("--- a/wide.txt\n+++ b/wide.txt\n@@ -1,4000 +1,4000 @@\n")
    assert diff.endswith("more characters not shown]")


def test_a_windowed_diff_applies_like_one_of_the_whole_files(tmp_path: Path) -> None:
    """Runs of equal lines around a change: the diff keeps full context, so patch(1) takes it."""
    lines = [f"{i % 3}\n" for i in range(3000)]
    new = [*lines[:1500], "1\n", "inserted\n", *lines[1500:2900], *lines[2901:]]
    old_text, new_text = "".join(lines), "".join(new)
    (tmp_path / "f").write_text(old_text)
    diff = unified_diff(old_text, new_text, "f")
    subprocess.run(["patch", "-s", "-F0", "-p1"], input=diff, text=True, cwd=tmp_path, check=True)
    assert (tmp_path / "f").read_text() == new_text


async def test_a_long_command_is_shown_cut_and_named_by_its_hash(
    driver: Driver, io: RecordingIO
) -> None:
    command = "echo " + "word " * 5000
    await driver.run(f"$ {command}", io=io, decide=deny)
    request = driver.parks[0].requests[0].approval_request
    assert len(request.detail) <= DETAIL_MAX and request.detail.startswith("echo word")
    assert "more characters not shown]" in request.detail
    assert len(request.scope_label) <= SCOPE_LABEL_MAX
    assert request.scope_label.startswith("command: echo word word")
    assert "; sha256 " in request.scope_label, "a rule from it covers this command alone"
