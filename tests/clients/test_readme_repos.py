"""The README's "Work on a repository and get a branch back", run as a newcomer would: its
git lines make the origin, its `blitz serve` line serves with it allowed, its commands
start a session on a clone, show the diff, write the patch and push a branch once the
printed `blitz approve` line is run. Only the paths (`/tmp/demo…`) and the session id
(`s_…`, printed by `blitz run`) are the test's own."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from support.blitz_serve import BlitzServe
from support.readme import README

SECTION = "### Work on a repository and get a branch back"


def lines_of(text: str) -> list[str]:
    """A shell block's commands, without their comments."""
    found = []
    for line in text.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command:
            found.append(command)
    return found


async def test_the_readme_gets_a_branch_back_from_a_local_repository(tmp_path: Path) -> None:
    section = README[README.index(SECTION) :]
    setup, session_block = re.findall(r"^```sh\n(.*?)^```$", section, re.S | re.M)[:2]
    demo = tmp_path / "demo"

    def ours(command: str) -> str:
        return command.replace("/tmp/demo", str(demo)).replace("/tmp/*.git", f"{tmp_path}/*.git")

    *git_lines, serve_line = lines_of(setup)
    for line in git_lines:
        await asyncio.to_thread(
            subprocess.run, ["bash", "-c", ours(line)], check=True, capture_output=True
        )
    flags = shlex.split(ours(serve_line))
    assert flags[:2] == [".venv/bin/blitz", "serve"]
    server = await BlitzServe(tmp_path / "data", *flags[2:]).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env["BLITZ_SERVER"] = server.grpc_target
    blitz = [sys.executable, "-m", "blitz.cli"]

    async def run(command: str) -> tuple[int, str, str]:
        argv = shlex.split(ours(command))
        assert argv[0] == ".venv/bin/blitz"
        proc = await asyncio.create_subprocess_exec(
            *blitz, *argv[1:], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        return proc.returncode or 0, out.decode(), err.decode()

    try:
        run_line, diff_line, patch_line, push_line = lines_of(session_block)
        # $'…' is bash's: let bash unquote it, then hand the words over as they are.
        unquoted = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", 'printf "%s\\0" ' + run_line.removeprefix(".venv/bin/blitz ")],
            check=True,
            capture_output=True,
        )
        words = unquoted.stdout.split(b"\0")[:-1]
        proc = await asyncio.create_subprocess_exec(
            *blitz,
            *[ours(w.decode()) for w in words],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()
        session = re.search(r"session (s_\w+)", err.decode())
        assert session, err.decode()
        sid = session.group(1)

        def with_session(line: str) -> str:
            return line.replace("s_…", sid)

        code, out, err = await run(with_session(diff_line))
        assert code == 0 and "+hello" in out, err
        code, out, err = await run(
            with_session(patch_line.replace("notes.patch", str(tmp_path / "notes.patch")))
        )
        assert code == 0, err
        assert b"+hello" in (tmp_path / "notes.patch").read_bytes()
        argv = shlex.split(with_session(push_line))
        pushing = await asyncio.create_subprocess_exec(
            *blitz, *argv[1:], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert pushing.stdout is not None
        said = (await asyncio.wait_for(pushing.stdout.readline(), 120)).decode()
        approve = re.search(r"blitz approve (s_\w+) (push_\w+)", said)
        assert approve, said
        code, _, err = await run(f".venv/bin/blitz approve {approve.group(1)} {approve.group(2)}")
        assert code == 0, err
        await asyncio.wait_for(pushing.communicate(), 120)
        assert pushing.returncode == 0
        logged = await asyncio.to_thread(
            subprocess.run,
            ["git", f"--git-dir={demo}.git", "log", "--oneline", "notes"],
            check=True,
            capture_output=True,
            text=True,
        )
        assert logged.stdout.strip()
    finally:
        await server.stop()
