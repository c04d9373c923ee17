"""The image, built by the suite and run by podman as compose.yaml runs it.

support/podman_images.py builds the repository's Dockerfile on a base made from Debian's
packages (no registry is reachable here). Each test runs it with the `podman run` flags
that compose.yaml's service stands for (`compose_flags`): the token as a secret file, a
named volume at /data, the ports on the host's loopback, no capability, a read-only root,
the limits, and the security options that give commands the box. The clients are this
repository's, on the host, through the published ports.

Skipped where podman cannot run; with BLITZ_REQUIRE_PODMAN=1 (CI) that fails instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import re
import shlex
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from support import podman
from support.podman import (
    MOST_FILES,
    MOST_PROCESSES,
    PODMAN,
    Container,
    compose_flags,
    run_flags,
    running,
    skip_or_fail,
)
from support.podman_images import BASE_PACKAGES, BASE_SUITE, HOST_FILES, Unavailable, images
from support.wire import Wire, decide, drive, follow_until_finished, open_wire, until

from blitz.auth.tokens import token_hash
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz_client import BlitzError

pytestmark = [
    pytest.mark.processes,
    # One worker builds the images and runs the containers: two would build at once.
    pytest.mark.xdist_group("podman"),
    # The first test builds the images (minutes; a few seconds once they are there).
    pytest.mark.timeout(1800),
]

REPO = Path(__file__).resolve().parents[2]
TOKEN = "blz_" + "k" * 43
AUTH = {"authorization": f"Bearer {TOKEN}"}
ONCE = t.DECISION_ONCE
# compose.yaml's security options that give commands the box rather than Landlock
# (docs/operations.md, "What confines commands").
BOX_OPTIONS = ("seccomp=", "apparmor=", "systempaths=")

# What an approved command tries, as the workspace's probe.py: "ok" for what it reached,
# the error otherwise. argv[1] is a file of another session's workspace.
PROBE = r"""
import json, os, socket, sys

def attempt(action):
    try:
        action()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return "ok"

def read(path):
    with open(path, "rb") as file:
        file.read(1)

def plant(path):
    with open(path, "wb") as file:
        file.write(b"planted")

def connect():
    socket.create_connection(("127.0.0.1", 8080), 5).close()

def find_server():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            if b"blitz\0serve" in file.read():
                return
    raise FileNotFoundError(2, "not among its processes")

print(json.dumps({
    "uid": os.getuid(),
    "shadow": attempt(lambda: read("/etc/shadow")),
    "database": attempt(lambda: read("/data/blitz.db")),
    "other_workspace": attempt(lambda: read(sys.argv[1])),
    "data_write": attempt(lambda: plant("/data/planted")),
    "server_port": attempt(connect),
    "server_process": attempt(find_server),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
}))
"""
WRITE_NOTE = "write note.txt\n```\nkept on the volume\n```"


@pytest.fixture(scope="module")
def image() -> str:
    try:
        return images().blitz
    except Unavailable as exc:
        skip_or_fail(str(exc))


@pytest.fixture(scope="module")
def service() -> dict[str, Any]:
    """compose.yaml's Blitz service."""
    loaded: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text())
    return dict(loaded["services"]["blitz"])


@pytest.fixture(scope="module")
def tokens_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The secret compose.yaml reads: a token for alice, written as its hash."""
    file = tmp_path_factory.mktemp("secrets") / "blitz_tokens"
    file.write_text(f"alice:sha256-{token_hash(TOKEN)}\n")
    file.chmod(0o644)
    return file


def as_compose_says(service: dict[str, Any], tokens_file: Path, data: str) -> list[str]:
    return compose_flags(
        service, folder=REPO, secrets={"blitz_tokens": tokens_file}, volumes={"blitz-data": data}
    )


@pytest.fixture(scope="module")
def hardened(image: str, service: dict[str, Any], tokens_file: Path) -> Iterator[Container]:
    """A container run as compose.yaml says, serving."""
    with podman.volume() as data, running(image, as_compose_says(service, tokens_file, data)) as c:
        c.serving()
        yield c


@contextlib.asynccontextmanager
async def client(
    container: Container, kind: str = "grpc", token: str = TOKEN
) -> AsyncIterator[Wire]:
    """A client of the server in `container` over `kind`, with `token` ("": none)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    endpoints = container.endpoints()
    wire = open_wire(kind, endpoints, headers)  # type: ignore[arg-type]  # has both addresses
    try:
        yield wire
    finally:
        await wire.close()


def results(events: list[t.TurnEvent]) -> list[dict[str, Any]]:
    return [dict(e.tool_result.result) for e in events if e.HasField("tool_result")]


def finished(events: list[t.TurnEvent]) -> t.TurnFinished:
    assert events and events[-1].HasField("finished"), events
    assert not events[-1].finished.HasField("error"), events[-1].finished.error
    return events[-1].finished


async def probe(wire: Wire) -> dict[str, Any]:
    """What an approved command reaches, in a session beside another session's file."""
    other = await wire.create_session(title="another session")
    finished(
        await drive(
            wire, other.id, "write secret.txt\n```\nnot yours\n```", decide(wire, other.id, ONCE)
        )
    )
    session = await wire.create_session(title="the probe")
    target = f"/data/workspaces/{other.workspace}/secret.txt"
    prompt = f"write probe.py\n```{PROBE}```\n$ python3 probe.py {target}"
    events = await drive(wire, session.id, prompt, decide(wire, session.id, ONCE))
    finished(events)
    ran = results(events)[-1]
    assert ran["exit_code"] == 0, ran
    probed: dict[str, Any] = json.loads(ran["output"])
    return probed


def planted(container: Container) -> bool:
    """Whether the probe's file reached the container's /data."""
    return container.exec("test", "-e", "/data/planted").returncode == 0


async def test_the_image_serves_both_ports_with_a_token_and_refuses_strangers(
    hardened: Container,
):
    serving = hardened.serving()
    assert (serving["grpc_port"], serving["http_port"]) == (50051, 8080), "the image's ports"
    for kind in ("grpc", "connect"):
        for wrong in ("", "blz_not-the-token"):
            async with client(hardened, kind, wrong) as stranger:
                with pytest.raises(BlitzError) as refused:
                    await stranger.create_session(title="no")
            assert refused.value.code == "unauthenticated", (kind, wrong)
        async with client(hardened, kind) as wire:
            session = await wire.create_session(title=f"in the image, over {kind}")
            events = await drive(
                wire, session.id, "$ echo ran in the image", decide(wire, session.id, ONCE)
            )
        assert "ran in the image" in finished(events).output
        assert [r["output"] for r in results(events)] == ["ran in the image\n"]

    async with httpx.AsyncClient(base_url=hardened.endpoints().http_url) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200
    assert await asyncio.to_thread(hardened.healthcheck) == 0, "the image's HEALTHCHECK"
    lines = [line for line in hardened.logs().splitlines() if line.strip()]
    assert lines and all(line.startswith("{") for line in lines), "JSON log lines only"


async def test_an_approved_command_runs_in_the_box_and_reaches_only_its_workspace(
    hardened: Container,
):
    """compose.yaml's options give commands bubblewrap's box: the workspace, the system
    read-only, its own PID and network namespaces."""
    assert hardened.serving()["commands"] == "box"
    async with client(hardened) as wire:
        info = await wire.call("GetServerInfo", s.GetServerInfoRequest())
        assert info.command_isolation == "box"
        probed = await probe(wire)
    assert probed["uid"] == 10001
    unreached = ("shadow", "database", "other_workspace", "server_port")
    assert {name: probed[name] for name in unreached if probed[name] == "ok"} == {}, probed
    # Its / is the box's own: what it wrote beside the workspace went nowhere.
    assert planted(hardened) is False
    assert probed["server_process"] == "not among its processes", "a PID namespace of its own"
    assert probed["interfaces"] == ["lo"], "a network namespace of its own"


async def test_without_the_box_options_commands_are_confined_by_landlock(
    image: str, service: dict[str, Any], tokens_file: Path
):
    """With podman's default security options (as Docker's), the box is refused and the
    server takes Landlock: still no file beyond the workspace, nor the server's port."""
    options = [o for o in service["security_opt"] if not o.startswith(BOX_OPTIONS)]
    assert options == ["no-new-privileges:true"]
    defaults = {**service, "security_opt": options}
    with podman.volume() as data:
        flags = as_compose_says(defaults, tokens_file, data)
        with running(image, flags) as container:
            assert (await asyncio.to_thread(container.serving))["commands"] == "landlock"
            async with client(container) as wire:
                probed = await probe(wire)
            assert planted(container) is False
    assert probed["uid"] == 10001
    unreached = ["shadow", "database", "other_workspace", "data_write", "server_process"]
    # Landlock refuses TCP connections from Linux 6.7 on (docs/operations.md).
    if tuple(int(n) for n in re.findall(r"\d+", platform.release())[:2]) >= (6, 7):
        unreached.append("server_port")
    assert {name: probed[name] for name in unreached if probed[name] == "ok"} == {}, probed


async def test_the_image_refuses_to_start_without_a_token_and_serves_with_one_it_made(
    image: str, service: dict[str, Any]
):
    env = {k: v for k, v in service["environment"].items() if not k.startswith("BLITZ_TOKENS")}
    bare = {k: v for k, v in service.items() if k not in ("secrets", "ports")}
    bare["environment"] = env
    with podman.volume() as data:
        flags = as_compose_says(bare, Path("/nonexistent"), data)
        with running(image, flags) as refused:
            assert await asyncio.to_thread(refused.exited) == 2
            assert "refusing to start" in refused.events()

        # As docs/operations.md makes one: `docker run --rm -v blitz-data:/data blitz blitz
        # token create ops --admin`, stored in the volume's database.
        create = ["blitz", "token", "create", "ops", "--admin"]
        made = await asyncio.to_thread(PODMAN, "run", "--rm", *run_flags(), *flags, image, *create)
        token = made.stdout.strip()
        assert token.startswith("blz_"), made.stdout

        served = {**service, "secrets": [], "environment": env}
        with running(image, as_compose_says(served, Path("/nonexistent"), data)) as server:
            await asyncio.to_thread(server.serving)
            async with client(server, "grpc", token) as wire:
                assert (await wire.create_session(title="with a stored token")).id


async def test_sigterm_drains_a_running_turn_before_the_container_stops(
    image: str, service: dict[str, Any], tokens_file: Path
):
    """`podman stop` sends the image's STOPSIGNAL through tini: the server drains, the
    running command finishes, and it exits 0 well within compose's stop_grace_period."""
    with (
        podman.volume() as data,
        running(image, as_compose_says(service, tokens_file, data)) as container,
    ):
        await asyncio.to_thread(container.serving)
        async with client(container) as wire:
            session = await wire.create_session(title="drained")
            stream = wire.run(session.id, "$ echo started; sleep 5; echo slept")
            try:
                await wire.decide_next(stream, session.id, ONCE)
                await until(stream, "tool_output")  # the command runs
                exit_code = await asyncio.to_thread(container.stop, 30)
                with contextlib.suppress(BlitzError):  # ended by the drain: SHUTTING_DOWN
                    async for _ in stream:
                        pass
            finally:
                await stream.aclose()
        assert exit_code == 0, "stopped by the drain, not by SIGKILL after 30 s"
        events = container.events()
        assert "draining" in events and events[-1] == "stopped", events

        await asyncio.to_thread(container.start)
        await asyncio.to_thread(container.serving, 2)
        async with client(container) as wire:
            replay = [e async for e in wire.stream("Watch", s.WatchRequest(session_id=session.id))]
    finished(replay)
    assert [r["output"] for r in results(replay)] == ["started\nslept\n"], "it ran to its end"


async def test_sessions_parked_turns_and_files_survive_a_new_container_on_the_volume(
    image: str, service: dict[str, Any], tokens_file: Path
):
    """As an upgrade does it: the container stopped and removed, a new one on the volume."""
    with podman.volume() as data:
        flags = as_compose_says(service, tokens_file, data)
        with running(image, flags) as first:
            await asyncio.to_thread(first.serving)
            async with client(first) as wire:
                session = await wire.create_session(title="kept")
                finished(await drive(wire, session.id, WRITE_NOTE, decide(wire, session.id, ONCE)))
                stream = wire.run(session.id, "$ cat note.txt")
                try:
                    asked = await until(stream, "approval_request")
                finally:
                    await stream.aclose()
            assert await asyncio.to_thread(first.stop) == 0

        with running(image, flags) as second:
            await asyncio.to_thread(second.serving)
            async with client(second, "connect") as wire:
                listed = await wire.call("ListSessions", s.ListSessionsRequest())
                assert session.id in [kept.id for kept in listed.sessions]
                await wire.decide(session.id, asked, ONCE)
                after = await follow_until_finished(wire, session.id, after_seq=asked.seq)
    finished(after)
    assert [r["output"] for r in results(after)] == ["kept on the volume\n"]


def test_the_container_runs_read_only_without_capabilities_within_compose_limits(
    hardened: Container, service: dict[str, Any]
):
    assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
    # Every process in it: the image's user, no capability, no way to gain one.
    found = hardened.exec(
        "sh",
        "-c",
        "grep -H -E '^(Uid|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/[0-9]*/status",
    ).stdout
    processes: dict[str, dict[str, list[str]]] = {}
    for line in found.splitlines():
        path, key, value = line.split(":", 2)
        processes.setdefault(path, {})[key] = value.split()
    assert len(processes) >= 3, "tini, the server and this probe"
    for path, status in processes.items():
        assert set(status["Uid"]) == {"10001"}, path  # real, effective, saved, filesystem
        for cap in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(status[cap][0], 16) == 0, (path, cap)
        assert status["NoNewPrivs"] == ["1"], path

    # A read-only root; the volume and a tmpfs (noexec) at /tmp are the writable places.
    for path in ("/planted", "/etc/planted", "/opt/blitz/planted", "/usr/local/bin/planted"):
        refused = hardened.exec("touch", path)
        assert refused.returncode != 0 and "Read-only file system" in refused.stderr, path
    assert hardened.exec("touch", "/data/written", "/tmp/written").returncode == 0
    copied = hardened.exec("sh", "-c", "cp /bin/true /tmp/true && /tmp/true")
    assert copied.returncode != 0 and "Permission denied" in copied.stderr

    # compose.yaml's bounds on all the commands together.
    assert cgroup_value(hardened, "pids/pids.max", "pids.max") == service["pids_limit"]
    memory = bytes_of(service["mem_limit"])
    assert cgroup_value(hardened, "memory/memory.limit_in_bytes", "memory.max") == memory


def cgroup_value(container: Container, v1: str, v2: str) -> int:
    """A limit of the container's cgroup, as the container sees it (cgroup v1 or v2)."""
    for path in (f"/sys/fs/cgroup/{v1}", f"/sys/fs/cgroup/{v2}"):
        read = container.exec("cat", path)
        if read.returncode == 0:
            return int(read.stdout)
    raise AssertionError(f"no {v1} nor {v2} in the container")


def bytes_of(size: str) -> int:
    match = re.fullmatch(r"(\d+)([kmg]?)", size.lower())
    assert match, size
    return int(match[1]) * 1024 ** "_kmg".index(match[2] or "_")


def test_the_docs_build_and_run_the_image_as_the_tests_do():
    """docs/operations.md, "Building without a registry": the same base, build options,
    engine settings and limits as the tests and .ci/run use."""
    doc = (REPO / "docs" / "operations.md").read_text()
    section = doc[doc.index("### Building without a registry") :]
    section = section[: section.index("\n### ", 1)]
    recipe = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M)
    assert recipe is not None
    words = shlex.split(recipe[1].replace("\\\n", " "))
    assert words[: words.index("mmdebstrap") + 1] == [
        "apt-get",
        "install",
        "podman",
        "runc",
        "mmdebstrap",
    ]
    start = words.index("mmdebstrap", words.index("mmdebstrap") + 1)
    base = words[start : words.index("base.tar")]
    assert base == [
        "mmdebstrap",
        "--variant=minbase",
        f"--include={','.join(BASE_PACKAGES)}",
        BASE_SUITE,
    ]
    build = words[words.index("build") :]
    assert {"--format", "docker", "--network", "host"} <= set(build)
    mounts = [build[i + 1] for i, word in enumerate(build) if word == "-v"]
    assert mounts == [f"{path}:{path}:ro" for path in HOST_FILES]
    assert build[build.index("--build-arg") + 1].startswith("PYTHON_IMAGE=")

    ci = (REPO / ".ci" / "run").read_text()
    engine = re.search(r"^\s*```toml\n(.*?)^\s*```$", section, re.S | re.M)
    assert engine is not None
    settings = [line.strip() for line in engine[1].splitlines()]
    assert settings[0] == "[engine]"
    assert all(f"'{line}'" in ci for line in settings), "what .ci/run writes"
    assert "export BLITZ_REQUIRE_PODMAN=1" in ci and "for tool in podman runc mmdebstrap" in ci
    files, processes = f"{MOST_FILES}:{MOST_FILES}", f"{MOST_PROCESSES}:{MOST_PROCESSES}"
    assert f"`--ulimit nofile={files} --ulimit nproc={processes}`" in section
