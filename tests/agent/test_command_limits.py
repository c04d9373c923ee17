"""What a command runs inside: rlimits, and nothing of it outliving it, in each isolation
this machine has (the box matrix, tests/sandbox/test_box.py, holds what each keeps out)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.processes import running
from support.waiting import wait_until

from blitz.agent.sandbox import CommandLimits, CommandSandbox, Isolation, available
from blitz.agent.shell import run_shell

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
ISOLATIONS = [how for how in Isolation if available(how)]


async def run(workspace: Path, command: str, how: Isolation = Isolation.UNCONFINED, **limits: int):
    return await run_shell(
        command,
        cwd=workspace,
        env=ENV,
        time_limit=20,
        output_cap=65536,
        sandbox=CommandSandbox(isolation=how, limits=CommandLimits(**limits)),
    )


@pytest.mark.parametrize("how", ISOLATIONS, ids=lambda i: i.value)
async def test_a_file_past_the_size_limit_is_not_written(workspace: Path, how: Isolation):
    outcome = await run(
        workspace, "head -c 3000000 /dev/zero > big && echo wrote", how, file_bytes=1_000_000
    )
    assert (workspace / "big").stat().st_size <= 1_000_000
    assert "File size limit exceeded" in outcome.output and "wrote" not in outcome.output


@pytest.mark.parametrize("how", ISOLATIONS, ids=lambda i: i.value)
async def test_memory_past_the_limit_is_refused(workspace: Path, how: Isolation):
    grab = "python3 -c 'bytearray(1500 * 2**20); print(\"got it\")'"
    outcome = await run(workspace, grab, how, memory_bytes=512 * 2**20)
    assert "MemoryError" in outcome.output and "got it" not in outcome.output


@pytest.mark.parametrize("how", ISOLATIONS, ids=lambda i: i.value)
async def test_cpu_past_the_limit_ends_the_command_before_its_timeout(
    workspace: Path, how: Isolation
):
    outcome = await run(workspace, "while :; do :; done", how, cpu_seconds=1)
    assert not outcome.timed_out, "the CPU limit ended it, not the 20 s wall clock"
    assert outcome.exit_code != 0


@pytest.mark.parametrize("how", ISOLATIONS, ids=lambda i: i.value)
async def test_nothing_a_command_started_outlives_it_setsid_included(
    workspace: Path, how: Isolation
):
    outcome = await run(workspace, "setsid sleep 33.5179 & sleep 33.5179 & echo started", how)
    assert outcome.exit_code == 0 and "started" in outcome.output
    assert await wait_until(lambda: not running("sleep", "33.5179"), within=5)


@pytest.mark.skipif(not available(Isolation.BOX), reason="no namespaces here")
async def test_in_a_namespace_a_command_sees_only_its_own_processes(workspace: Path):
    outcome = await run(workspace, "echo $$; ls /proc | grep -c '^[0-9]'", Isolation.BOX)
    own, count = outcome.output.split()
    # bwrap's init, the shell, ls and grep: nothing of the server
    assert own == "2" and int(count) <= 4
    await asyncio.sleep(0)
