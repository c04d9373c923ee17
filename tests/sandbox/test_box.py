"""The box matrix: what principal alice's approved commands can reach beside bob's session.

A real `blitz serve` with two principals, its commands confined by one mechanism (the
namespace box, or Landlock), run as root or as an unprivileged user, its configuration
file under /etc where the test may write there; alice runs each attack as an approved
command through the SDK, bob has a session with a secret beside hers. Each attack is
refused or bounded, while ordinary work still works. A mechanism or a user this machine
cannot give is skipped with one line.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.replicas import replica_env

from blitz.agent.cgroups import cgroup_roots
from blitz.agent.sandbox import Isolation, available
from blitz.v1 import turn_pb2 as t
from blitz_client import Blitz

ALICE, BOB = "alice-tok-4f0a9e8d1c2b3a4f5e6d7c8b", "bob-tok-9e8d7c6b5a4f3e2d1c0b9a8f"
SECRET = "bobs-secret-7c1d"
# In the server's configuration file, as a provider key or a webhook secret would be.
CONFIG_SECRET = "config-secret-5b2e9a"
NOBODY = 65534
MECHANISMS = [Isolation.BOX, Isolation.LANDLOCK]
# Under `make test-parallel`, all on one worker: two tests look for their processes among
# the whole machine's (`_processes_of_shell`), and a fork bomb starves a box beside it.
pytestmark = pytest.mark.xdist_group("box")


def _can_be_nobody() -> str:
    """Why the unprivileged server cannot run here ("" when it can)."""
    if os.geteuid() != 0:
        return ""  # this user is unprivileged already
    if shutil.which("setpriv") is None:
        return "no setpriv to drop to an unprivileged user"
    # The server runs its own interpreter again (Landlock's wrapper): it must reach it.
    again = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import blitz'], check=True)"
    )
    probe = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", again],
        capture_output=True, check=False, cwd="/",
    )  # fmt: skip
    if probe.returncode:
        return "the test's interpreter is not reachable by an unprivileged user"
    return ""


@dataclass
class Boxed:
    """A running server, its data folder, alice's and bob's sessions."""

    process: subprocess.Popen[bytes]
    data: Path
    grpc: str
    alice: Blitz
    alice_session: str
    alice_workspace: Path
    bob_workspace: Path
    root: bool
    mechanism: Isolation
    # The server's `--config` file, under /etc; None where the test cannot write there.
    config: Path | None

    def run(self, command: str, *, approve: bool = True) -> tuple[str, list[t.TurnEvent]]:
        """Run `command` as alice's approved command; its output and the turn's events."""
        events = []
        for event in self.alice.run(self.alice_session, command):
            events.append(event)
            if event.HasField("approval_request"):
                decision = "once" if approve else "deny"
                self.alice.decide(self.alice_session, event.approval_request.request_id, decision)
        results = [e.tool_result for e in events if e.HasField("tool_result")]
        output = "\n".join(str(dict(r.result).get("output", "")) for r in results)
        return output, events


def _start(
    mechanism: Isolation, *, as_root: bool, tmp: Path, config: Path | None
) -> Iterator[Boxed]:
    data = Path(tempfile.mkdtemp(prefix="blitz-box-", dir="/tmp"))
    log = tmp / "server.log"
    env = {**replica_env(), "BLITZ_TOKENS": f"alice:{ALICE},bob:{BOB}"}
    prefix: list[str] = []
    if not as_root:
        if os.geteuid() == 0:
            os.chown(data, NOBODY, NOBODY)
            prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        env["HOME"] = str(data)
    argv = [
        *prefix, sys.executable, "-m", "blitz.cli", "serve", "--grpc-port=0", "--http-port=0",
        f"--data-dir={data}", f"--command-isolation={mechanism.value}", "--log-format=json",
        "--command-timeout=30", *([f"--config={config}"] if config else []),
        # A fork bomb and ten processes of a gigabyte are bounded as a whole by a cgroup
        # where the server can make one; else by the processes of the server's user (a
        # dedicated user's, here) and each process's address space.
        *(["--command-tree-memory=3GiB", "--command-tree-processes=100"]
          if as_root and cgroup_roots()
          else ["--command-processes=200", "--command-memory=4GiB"]),
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    try:
        grpc = _serving(process, log)
        bob = Blitz(grpc, token=BOB)
        alice = Blitz(grpc, token=ALICE)
        try:
            bobs = bob.create_session(title="bob's")
            bob_ws = data / "workspaces" / bobs.workspace
            (bob_ws / "secret.txt").write_text(SECRET)
            if not as_root and os.geteuid() == 0:
                os.chown(bob_ws / "secret.txt", NOBODY, NOBODY)
            alices = alice.create_session(title="alice's")
            alice_ws = data / "workspaces" / alices.workspace
            yield Boxed(
                process, data, grpc, alice, alices.id, alice_ws, bob_ws, as_root, mechanism,
                config,
            )  # fmt: skip
        finally:
            alice.close()
            bob.close()
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(data, ignore_errors=True)


def _serving(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{") and json.loads(line).get("event") == "serving":
                entry = json.loads(line)
                assert entry["commands"] in ("box", "landlock")
                return f"127.0.0.1:{entry['grpc_port']}"
        time.sleep(0.05)
    raise AssertionError(f"the server did not start:\n{log.read_text()}")


@pytest.fixture(
    scope="module",
    params=[(m, root) for m in MECHANISMS for root in (True, False)],
    ids=lambda p: f"{p[0].value}-{'root' if p[1] else 'unprivileged'}",
)
def boxed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    mechanism, as_root = request.param
    if not available(mechanism):
        pytest.skip(f"{mechanism.value}: this machine does not allow it")
    if as_root and os.geteuid() != 0:
        pytest.skip("not root here")
    if not as_root and (why := _can_be_nobody()):
        pytest.skip(why)
    with _config_under_etc() as config:
        yield from _start(
            mechanism, as_root=as_root, tmp=tmp_path_factory.mktemp("box"), config=config
        )


@contextlib.contextmanager
def _config_under_etc() -> Iterator[Path | None]:
    """A configuration file of this run's own in /etc, readable by everyone as such files
    often are (None where this user cannot write /etc); removed at the end."""
    if not os.access("/etc", os.W_OK):
        yield None
        return
    config = Path(f"/etc/blitz-test-{uuid.uuid4().hex[:12]}.toml")
    config.write_text(f"# {CONFIG_SECRET}\nwebhook_timeout = 10\n")
    config.chmod(0o644)
    try:
        yield config
    finally:
        config.unlink(missing_ok=True)


def test_bobs_workspace_can_be_neither_read_nor_written(boxed: Boxed):
    bob = boxed.bob_workspace
    output, _ = boxed.run(
        f"$ cat {bob}/secret.txt; cat ../{bob.name}/secret.txt; ls ..; echo x > {bob}/pwn"
    )
    assert SECRET not in output
    assert bob.name not in output.replace(f"{bob}/", "").replace(f"../{bob.name}/", "")
    assert not (bob / "pwn").exists()


def test_the_data_folder_and_the_database_are_out_of_reach(boxed: Boxed):
    db = boxed.data / "blitz.db"
    output, _ = boxed.run(f"$ head -c 16 {db}; ls {boxed.data}; ln -s {db} l && head -c 16 l")
    assert "SQLite format" not in output
    # The box holds the folders that lead to the workspace, and nothing else of them.
    assert "blitz.db" not in output.replace(str(db), "")


def test_the_servers_proc_entries_stay_hidden_even_after_umount(boxed: Boxed):
    pid = boxed.process.pid
    output, _ = boxed.run(
        f"$ cat /proc/{pid}/environ /proc/{pid}/cmdline | base64 -w0; echo; umount /proc; "
        f"cat /proc/{pid}/environ /proc/{pid}/cmdline | base64 -w0; echo; "
        "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; done | base64 -w0"
    )
    seen = output.encode() + _decoded(output)
    for secret in (ALICE, BOB):
        assert secret.encode() not in seen


def test_system_secrets_and_the_home_folder_are_not_readable(boxed: Boxed):
    home = Path("/root") if boxed.root else boxed.data
    output, _ = boxed.run(f"$ head -c 200 /etc/shadow; ls -a {home}; cat ../../../etc/shadow")
    assert "root:" not in output
    assert ".bashrc" not in output and "blitz.db" not in output


def test_the_configuration_file_cannot_be_read_where_the_system_is_shown(boxed: Boxed):
    """The probe of issue 33: /etc is shown, and the file the server was configured with
    lies there, readable by everyone, with every secret it may hold."""
    if boxed.config is None:
        pytest.skip("this user cannot write /etc")
    config = boxed.config
    assert CONFIG_SECRET in config.read_text(), "the server's own user reads it"
    output, _ = boxed.run(
        f"$ cat {config}; base64 -w0 {config}; echo; dd if={config} status=none | base64 -w0;"
        f" echo; python3 -c \"print(open('{config}').read())\"; head -c 5 /etc/passwd"
    )
    assert "root:" in output, "the rest of /etc is still there"
    assert CONFIG_SECRET not in output
    assert CONFIG_SECRET.encode() not in _decoded(output)


def test_nothing_outside_the_workspace_can_be_written(boxed: Boxed):
    boxed.run("$ echo x > ../escape; echo y > /tmp/../outside; ln -s / up; echo z > up/z")
    assert not (boxed.alice_workspace.parent / "escape").exists()
    assert not Path("/z").exists() and not Path("/outside").exists()


def test_git_config_is_read_only_unless_the_command_may_write_git(boxed: Boxed):
    ws = boxed.alice_workspace
    boxed.run("$ git init -q . && echo made")
    assert (ws / ".git" / "config").exists()
    before = (ws / ".git" / "config").read_bytes()
    boxed.run("$ echo '[core] hooksPath = /tmp' >> .git/config")
    if boxed.mechanism is Isolation.LANDLOCK:
        # Landlock only adds rights below a folder: the workspace's are .git's too
        # (docs/security.md says so).
        assert (ws / ".git" / "config").read_bytes() != before
        return
    assert (ws / ".git" / "config").read_bytes() == before
    boxed.run("$+git git config user.name alice")
    assert b"alice" in (ws / ".git" / "config").read_bytes()


def test_a_listener_on_loopback_is_reached_only_with_the_network_approved(boxed: Boxed):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    reached: list[bytes] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            reached.append(conn.recv(100))
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    connect = (
        'python3 -c "import socket; '
        f"socket.create_connection(('127.0.0.1', {port}), 5).send(b'hi')\""
    )
    try:
        boxed.run(f"$ {connect}")
        assert not reached, "no network unless approved"
        _, events = boxed.run(f"$+net {connect}")
        [approval] = [e.approval_request for e in events if e.HasField("approval_request")]
        assert approval.kind == t.ACTION_KIND_NETWORK
        assert approval.scope_label.startswith("command+network: python3")
        deadline = time.monotonic() + 10
        while not reached and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reached == [b"hi"]
    finally:
        listener.close()


def test_a_fork_bomb_is_bounded(boxed: Boxed):
    started = time.monotonic()
    # A name of this run's own: another run's bomb on this machine is not this one's.
    bomb = f"b{uuid.uuid4().hex[:8]}"
    _, events = boxed.run(f"$ {bomb}() {{ {bomb} | {bomb} & }}; {bomb}; sleep 1; echo alive")
    assert time.monotonic() - started < 60
    [finished] = [e.finished for e in events if e.HasField("finished")]
    assert not finished.HasField("error"), "the server survived and finished the turn"
    # It ended with the command: no process of it is left.
    assert _processes_of_shell(f"{bomb}() {{") == []
    _let_the_users_processes_be_reaped(boxed)


def test_ten_gigabytes_across_processes_are_bounded(boxed: Boxed):
    grab = "python3 -c 'x = bytearray(5 * 2**30); import time; time.sleep(3); print(\"held\")'"
    output, _ = boxed.run(f"$ {grab} & {grab} & wait")
    assert output.count("held") < 2


def test_a_setsid_child_does_not_outlive_the_turn(boxed: Boxed):
    pause = f"47.{random.randint(1000, 9999)}"
    boxed.run(f"$ setsid sleep {pause} & echo started")
    deadline = time.monotonic() + 5
    while _processes_of_shell(f"sleep {pause}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_of_shell(f"sleep {pause}") == []


def test_ordinary_work_still_works(boxed: Boxed):
    ws = boxed.alice_workspace
    (ws / "Makefile").write_text("all:\n\t@echo made it\n")
    (ws / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    script = textwrap.dedent("""\
        $ python3 -c 'print(6 * 7)'
        $ git init -q . 2>/dev/null; git status --short | head -3
        $ make
        $ python3 -m pytest -q test_one.py 2>&1 | tail -1
    """)
    output, _ = boxed.run(script)
    assert "42" in output and "made it" in output and "Makefile" in output
    if "No module named pytest" not in output:
        assert "1 passed" in output


def _let_the_users_processes_be_reaped(boxed: Boxed) -> None:
    """Wait (20 s at most) until the unprivileged server's user has no process but the
    server: killed ones still count against its process limit until they are reaped (by
    PID 1, without a PID namespace), and the next test's commands could not fork."""
    if boxed.root or os.geteuid() != 0:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        others = [pid for pid in _pids_of_uid(NOBODY) if pid != boxed.process.pid]
        if not others:
            return
        time.sleep(0.1)


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                pids.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile
    return pids


def _processes_of_shell(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if needle in cmdline and "pytest" not in cmdline:
            found.append(int(entry.name))
    return found


def _decoded(output: str) -> bytes:
    """What the base64 in `output` says (past the masking of secrets in output)."""
    found = b""
    for word in re.findall(r"[A-Za-z0-9+/=]{8,}", output):
        with contextlib.suppress(ValueError):
            found += base64.b64decode(word + "=" * (-len(word) % 4))
    return found
