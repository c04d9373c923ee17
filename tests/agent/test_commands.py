"""Commands run bounded: a timeout, an output cap, a scrubbed environment, no leftovers;
their live output comes in whole lines."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from blitz.agent.shell import LINE_HOLD, run_shell

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


async def test_output_and_exit_code_come_back(workspace: Path) -> None:
    outcome = await run_shell(
        "echo out; echo err >&2; exit 3", cwd=workspace, env=ENV, time_limit=5, output_cap=1000
    )
    assert (outcome.exit_code, outcome.output, outcome.truncated, outcome.timed_out) == (
        3,
        "out\nerr\n",
        False,
        False,
    )


async def test_command_runs_in_the_workspace_with_only_the_given_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLITZ_TEST_SECRET", "hunter2")
    outcome = await run_shell("pwd; env", cwd=workspace, env=ENV, time_limit=5, output_cap=10000)
    lines = outcome.output.splitlines()
    assert lines[0] == str(workspace)
    assert "hunter2" not in outcome.output
    assert "PATH=/usr/bin:/bin" in lines


async def test_output_beyond_the_cap_is_cut_and_flagged(workspace: Path) -> None:
    outcome = await run_shell(
        "head -c 100000 /dev/zero | tr '\\0' x",
        cwd=workspace,
        env=ENV,
        time_limit=5,
        output_cap=100,
    )
    assert outcome.output == "x" * 100
    assert outcome.truncated
    assert outcome.exit_code == 0


async def test_timeout_kills_the_command(workspace: Path) -> None:
    started = time.monotonic()
    outcome = await run_shell("sleep 30", cwd=workspace, env=ENV, time_limit=0.3, output_cap=100)
    assert outcome.timed_out
    assert outcome.exit_code is None
    assert time.monotonic() - started < 5


async def test_timeout_kills_the_whole_process_group(workspace: Path) -> None:
    """A background child holding the output pipe is killed too, not left running."""
    outcome = await run_shell(
        "sleep 30 & echo $! > child.pid; wait",
        cwd=workspace,
        env=ENV,
        time_limit=0.5,
        output_cap=100,
    )
    assert outcome.timed_out
    child = int((workspace / "child.pid").read_text())
    assert_gone(child)


@pytest.mark.parametrize("job", ["sleep 30", "sleep 30 >/dev/null 2>&1"])
async def test_a_command_is_done_when_its_shell_exits(workspace: Path, job: str) -> None:
    """What it leaves running in the background neither holds it to its timeout nor lives on."""
    started = time.monotonic()
    outcome = await run_shell(
        f"{job} & echo $! > child.pid; echo started",
        cwd=workspace,
        env=ENV,
        time_limit=60,
        output_cap=100,
    )
    assert time.monotonic() - started < 30  # far from the limit, even on a loaded machine
    assert (outcome.exit_code, outcome.output, outcome.timed_out) == (0, "started\n", False)
    assert_gone(int((workspace / "child.pid").read_text()))


async def test_cancellation_kills_the_command_and_propagates(workspace: Path) -> None:
    task = asyncio.create_task(
        run_shell(
            "echo $$ > pid.txt; exec sleep 30",
            cwd=workspace,
            env=ENV,
            time_limit=60,
            output_cap=100,
        )
    )
    try:
        await wait_for_file(workspace / "pid.txt")
        pid = int((workspace / "pid.txt").read_text())
    finally:
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_gone(pid)


async def test_live_output_comes_in_whole_lines(workspace: Path) -> None:
    """A token written in two pieces reaches `on_output` in one (the server masks per event)."""
    shown: list[str] = []
    outcome = await run_shell(
        "printf 'tok'; sleep 0.2; printf 'en\\nnext'; sleep 0.2; printf ' line\\r'; "
        "sleep 0.2; printf 'tail'",
        cwd=workspace,
        env=ENV,
        time_limit=10,
        output_cap=1000,
        on_output=shown.append,
    )
    assert outcome.output == "token\nnext line\rtail"
    assert "".join(shown) == outcome.output
    # Every piece ends a line (\n or \r) but the last, held until the command ended.
    assert all(piece.endswith(("\n", "\r")) for piece in shown[:-1])
    assert shown[-1] == "tail"
    assert any("token\n" in piece for piece in shown)


async def test_a_character_split_between_writes_is_shown_whole(workspace: Path) -> None:
    shown: list[str] = []
    await run_shell(
        "printf '\\303'; sleep 0.2; printf '\\251\\n'",
        cwd=workspace,
        env=ENV,
        time_limit=10,
        output_cap=1000,
        on_output=shown.append,
    )
    assert shown == ["é\n"]


async def test_a_line_longer_than_the_hold_is_shown_in_long_pieces(workspace: Path) -> None:
    shown: list[str] = []
    outcome = await run_shell(
        "head -c 20000 /dev/zero | tr '\\0' x",
        cwd=workspace,
        env=ENV,
        time_limit=10,
        output_cap=100000,
        on_output=shown.append,
    )
    assert "".join(shown) == outcome.output == "x" * 20000
    assert all(len(piece) >= LINE_HOLD for piece in shown[:-1])


async def test_only_the_kept_output_is_shown(workspace: Path) -> None:
    shown: list[str] = []
    outcome = await run_shell(
        "head -c 100000 /dev/zero | tr '\\0' x",
        cwd=workspace,
        env=ENV,
        time_limit=10,
        output_cap=100,
        on_output=shown.append,
    )
    assert outcome.truncated
    assert shown == ["x" * 100]


async def test_a_partial_line_is_shown_when_the_command_times_out(workspace: Path) -> None:
    shown: list[str] = []
    outcome = await run_shell(
        "printf 'almost'; sleep 30",
        cwd=workspace,
        env=ENV,
        time_limit=0.5,
        output_cap=100,
        on_output=shown.append,
    )
    assert outcome.timed_out
    assert shown == ["almost"]


@pytest.mark.parametrize("cancels", [1, 2])
async def test_a_cancelled_command_leaves_no_task_behind(workspace: Path, cancels: int) -> None:
    """Cancelled once, or again while it cleans up: every task it made has ended."""
    before = asyncio.all_tasks()
    task = asyncio.create_task(
        run_shell(
            "echo $$ > pid.txt; echo started; exec sleep 30",
            cwd=workspace,
            env=ENV,
            time_limit=60,
            output_cap=100,
            on_output=lambda text: None,
        )
    )
    try:
        await wait_for_file(workspace / "pid.txt")
        pid = int((workspace / "pid.txt").read_text())
    finally:
        task.cancel()
    for _ in range(cancels - 1):
        await asyncio.sleep(0)  # into its cleanup, then cancel that too
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.all_tasks() - before == set()
    assert_gone(pid)


async def wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + 5
    while not has_text(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)


def has_text(path: Path) -> bool:
    return path.exists() and bool(path.read_text().strip())


def assert_gone(pid: int) -> None:
    """The process is dead: gone, or a zombie awaiting a reaper outside our control."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} is still running")


async def test_a_command_starts_off_the_loop_and_a_cancel_meanwhile_leaves_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    """Making a command's cgroup (a mkdir in the kernel) can take tens of milliseconds on a
    busy machine: the launch runs on a thread, the event loop serving meanwhile; a command
    cancelled meanwhile never starts, and what its launch made is removed before the
    cancellation is through."""
    import threading

    from blitz.agent.sandbox import CommandSandbox, Isolation, Launch

    made = tmp_path / "made-by-the-launch"
    threads: list[str] = []
    release, done = threading.Event(), threading.Event()

    class SlowLaunch(CommandSandbox):
        def launch(self, command: str, **_: object) -> Launch:  # type: ignore[override]
            threads.append(threading.current_thread().name)
            release.wait(5)
            made.mkdir()
            done.set()
            return Launch(argv=["/bin/sh", "-c", command], env={}, tmp=made)

    running = asyncio.ensure_future(
        run_shell(
            "echo hi",
            cwd=workspace,
            env={},
            time_limit=5,
            output_cap=1000,
            sandbox=SlowLaunch(isolation=Isolation.UNCONFINED),
        )
    )
    for _ in range(500):  # the loop turns while the launch waits on its thread
        if threads:
            break
        await asyncio.sleep(0.01)
    assert threads and threads != [threading.current_thread().name]
    running.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert done.is_set() and not made.exists()
