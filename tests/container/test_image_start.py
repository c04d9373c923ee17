"""The Dockerfile's own build, install and start steps, replayed here as the image runs them.

The image itself is built and run by podman where podman runs (test_image_podman.py);
these replay the Dockerfile's steps outside a container, so that a change to them is
checked in seconds, with or without a container engine. The builder stage's COPY lines
(through .dockerignore) and RUN lines build the wheels; the runtime stage's RUN that takes
the builder's output installs them into a fresh virtual environment, as pinned as in the
image; then the server starts with the runtime stage's ENV, WORKDIR and ENTRYPOINT/CMD.
Change those lines and these tests run the change. The image's filesystem (/src, /build,
/wheels, /opt/blitz, /data, …) lives under one temporary folder, `root`; pip uses this
machine's configuration and cache.

What needs root or Debian (apt-get, the user, tini itself) is checked by reading the
Dockerfile in test_dockerfile.py instead: here tini's place is taken by the test, which
sends SIGTERM straight to the server as tini would hand it on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from support.dockerfile import Dockerfile, DockerIgnore, Instruction, Stage, env_after

from blitz.v1 import turn_pb2
from blitz_client import AsyncBlitz, BlitzError

# Building a wheel and a virtual environment takes tens of seconds; a loaded CI machine
# may take several times that.
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
# What the python base image sets before our ENV lines: Debian's PATH behind its own
# /usr/local/bin, and a UTF-8 locale.
BASE_IMAGE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
# The programs that prepare the image as root; the tests read rather than run them.
SYSTEM_SET_UP = ("apt-get", "groupadd")
STEP_TIMEOUT_S = 240.0
START_TIMEOUT_S = 90.0
PROMPT = "$ echo ran in the image\nAll done."


@dataclass
class Image:
    """The replayed image: its filesystem's root, and how a container of it starts."""

    root: Path
    env: dict[str, str]
    workdir: Path
    entrypoint: list[str]
    cmd: list[str]
    healthcheck: list[str]

    def host_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")


@pytest.fixture(scope="module")
def image(
    tmp_path_factory: pytest.TempPathFactory, dockerfile: Dockerfile, dockerignore: DockerIgnore
) -> Image:
    """The wheels built and installed by the Dockerfile's own lines, under a fresh root."""
    root = tmp_path_factory.mktemp("image-root")
    assert " " not in str(root), "RUN lines are rewritten as text: the root needs no quoting"
    builder, runtime = dockerfile.stage("builder"), dockerfile.final
    base_python = _base_image_python(tmp_path_factory.mktemp("base-image-bin"))

    _replay(
        builder, root=root, ignore=dockerignore, base_python=base_python, runs=builder.all("RUN")
    )
    wheels = sorted((root / "wheels").glob("*.whl"))
    assert [w.name for w in wheels] == [
        "blitz_client-0.1.0-py3-none-any.whl",
        "blitz_server-0.1.0-py3-none-any.whl",
    ]

    installs = [run for run in runtime.all("RUN") if _mounts_from(run, builder.name)]
    assert len(installs) == 1, "one RUN installs what the builder made"
    others = [run for run in runtime.all("RUN") if run not in installs]
    assert all(run.args.startswith(SYSTEM_SET_UP) for run in others), [r.args for r in others]
    _replay(runtime, root=root, ignore=dockerignore, base_python=base_python, runs=installs)

    for volume in json.loads(runtime.last("VOLUME").args):
        (root / volume.lstrip("/")).mkdir(parents=True, exist_ok=True)
    # Docker sets HOME from the user's passwd entry, which the image's useradd writes.
    (useradd,) = [run for run in others if "useradd" in run.args]
    home = re.search(r"--home-dir\s+(\S+)", useradd.args)
    assert home is not None
    env = env_after(runtime, {**BASE_IMAGE_ENV, "HOME": home[1]})
    return Image(
        root=root,
        env={key: _host_paths(value, root) for key, value in env.items()},
        workdir=root / runtime.last("WORKDIR").args.lstrip("/"),
        entrypoint=runtime.last("ENTRYPOINT").exec_form(),
        cmd=runtime.last("CMD").exec_form(),
        healthcheck=runtime.last("HEALTHCHECK").exec_form(),
    )


async def test_the_image_serves_both_ports_with_a_token_and_stops_cleanly_on_sigterm(
    image: Image, tmp_path: Path
):
    # The token as compose.yaml gives it: a secret file, the token written as its hash.
    token = "blz_" + "t" * 43
    tokens_file = tmp_path / "blitz_tokens"
    tokens_file.write_text(f"alice:sha256-{hashlib.sha256(token.encode()).hexdigest()}\n")
    async with container(image, BLITZ_TOKENS_FILE=str(tokens_file)) as server:
        urls = [f"127.0.0.1:{server.grpc_port}", f"http://127.0.0.1:{server.http_port}"]
        for url in urls:
            finished = await _run_a_turn(url, token)
            assert not finished.HasField("error"), finished.error
            assert "All done." in finished.output
            for wrong in (None, "blz_not-the-token"):
                async with AsyncBlitz(url, token=wrong) as stranger:
                    with pytest.raises(BlitzError) as refused:
                        await stranger.create_session(title="no")
                assert refused.value.code == "unauthenticated", url

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.http_port}") as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/readyz")).status_code == 200
        assert await server.healthcheck() == 0

        data = Path(image.env["BLITZ_DATA_DIR"])
        assert data == image.host_path("/data") and (data / "blitz.db").is_file()
        assert len(list((data / "workspaces").iterdir())) == 2, "a workspace per session"

        assert await server.stop() == 0
        assert server.events[-1] == "stopped"
        assert await server.healthcheck() == 1, "the probe fails once the server is gone"
    assert server.all_json, f"every log line is JSON: {server.other_lines}"


async def test_the_image_refuses_to_start_without_a_token_and_serves_with_one_made_by_blitz_token(
    image: Image, tmp_path: Path
):
    data = tmp_path / "data"
    async with container(image, BLITZ_DATA_DIR=str(data)) as refused:
        assert await refused.exited() == 2
    assert "refusing to start" in refused.events

    # `docker run … IMAGE blitz token create NAME`: the image's command line, its settings.
    made = await asyncio.create_subprocess_exec(
        *_command(image, ["blitz", "token", "create", "ops", "--admin"]),
        env={**image.env, "BLITZ_DATA_DIR": str(data)},
        cwd=image.workdir,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(made.communicate(), START_TIMEOUT_S)
    assert made.returncode == 0
    token = out.decode().strip()

    async with container(image, BLITZ_DATA_DIR=str(data)) as server:
        async with AsyncBlitz(f"127.0.0.1:{server.grpc_port}", token=token) as blitz:
            session = await blitz.create_session(title="with a stored token")
            assert session.id
        assert await server.stop() == 0


async def _run_a_turn(url: str, token: str) -> turn_pb2.TurnFinished:
    async with AsyncBlitz(url, token=token) as blitz:
        session = await blitz.create_session(title=f"in the image, over {url}")
        async for event in blitz.run(session.id, PROMPT):
            if event.HasField("approval_request"):
                await blitz.decide(session.id, event.approval_request.request_id, "once")
            elif event.HasField("tool_result"):
                assert event.tool_result.result["output"] == "ran in the image\n"
            elif event.HasField("finished"):
                return event.finished
    raise AssertionError("the turn did not finish")


@dataclass
class Container:
    """A server started as the image starts it; its log lines as they come."""

    image: Image
    proc: asyncio.subprocess.Process
    lines: list[dict[str, object]] = field(default_factory=list)
    other_lines: list[str] = field(default_factory=list)
    serving: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def events(self) -> list[object]:
        return [line.get("event") for line in self.lines]

    @property
    def all_json(self) -> bool:
        return not self.other_lines

    @property
    def _serving(self) -> dict[str, object]:
        return next(line for line in self.lines if line.get("event") == "serving")

    @property
    def grpc_port(self) -> int:
        return int(str(self._serving["grpc_port"]))

    @property
    def http_port(self) -> int:
        return int(str(self._serving["http_port"]))

    async def exited(self) -> int:
        return await asyncio.wait_for(self.proc.wait(), START_TIMEOUT_S)

    async def stop(self) -> int:
        """SIGTERM, as `docker stop` sends it (STOPSIGNAL) and tini hands it on."""
        self.proc.send_signal(signal.SIGTERM)
        return await self.exited()

    async def healthcheck(self) -> int:
        """The HEALTHCHECK's command, as Docker runs it in the container."""
        env = {**self.image.env, "BLITZ_HTTP_PORT": str(self.http_port)}
        probe = await asyncio.create_subprocess_exec(
            *self.image.healthcheck, env=env, cwd=self.image.workdir,
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        return await asyncio.wait_for(probe.wait(), START_TIMEOUT_S)

    async def read_logs(self) -> None:
        assert self.proc.stderr is not None
        while raw := await self.proc.stderr.readline():
            try:
                line = json.loads(raw)
            except ValueError:
                self.other_lines.append(raw.decode(errors="replace"))
                continue
            self.lines.append(line)
            if line.get("event") == "serving":
                self.serving.set()


@asynccontextmanager
async def container(image: Image, **env: str) -> AsyncIterator[Container]:
    """The image's command with its environment (`env` added), on any free ports.

    Yields once the server serves, or once it has exited (a refusal); kills it on the way
    out if it is still running.
    """
    proc = await asyncio.create_subprocess_exec(
        *_command(image, image.cmd),
        env={**image.env, "BLITZ_GRPC_PORT": "0", "BLITZ_HTTP_PORT": "0", **env},
        cwd=image.workdir,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    running = Container(image, proc)
    reader = asyncio.create_task(running.read_logs(), name="container-logs")
    try:
        exit_ = asyncio.create_task(proc.wait(), name="container-exit")
        serving = asyncio.create_task(running.serving.wait(), name="container-serving")
        try:
            await asyncio.wait(
                [exit_, serving], timeout=START_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in (exit_, serving):
                task.cancel()
            await asyncio.gather(exit_, serving, return_exceptions=True)
        assert running.serving.is_set() or proc.returncode is not None, "neither served nor exited"
        yield running
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await asyncio.wait_for(reader, START_TIMEOUT_S)


def _command(image: Image, cmd: list[str]) -> list[str]:
    """ENTRYPOINT + CMD as they run, less tini (not installed here: the test is the init)."""
    assert image.entrypoint == ["/usr/bin/tini", "--"]
    program = shutil.which(cmd[0], path=image.env["PATH"])
    assert program is not None and Path(program).is_relative_to(image.root / "opt"), program
    return [program, *cmd[1:]]


def _replay(
    stage: Stage, *, root: Path, ignore: DockerIgnore, base_python: Path, runs: list[Instruction]
) -> None:
    """The stage's WORKDIR and context COPY lines, and the RUN lines among `runs`, in order."""
    workdir = root
    for instruction in stage.instructions:
        if instruction.keyword == "WORKDIR":
            workdir = root / instruction.args.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif instruction.keyword == "COPY":
            assert not instruction.flag("from"), "a COPY from another stage: replay it here"
            _copy(instruction, root=root, workdir=workdir, ignore=ignore)
        elif instruction in runs:
            for mount in instruction.flag("mount"):
                options = dict(part.split("=", 1) for part in mount.split(","))
                # One root for both stages: a bind mount of the builder's folder must show
                # it where it was made.
                if options["type"] == "bind" and "from" in options:
                    assert options["source"] == options["target"], mount
                # A file of the build context, mounted for this RUN alone: put in place.
                elif options["type"] == "bind":
                    _bind_context_file(options, root=root, workdir=workdir, ignore=ignore)
            env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith("BLITZ_") and k not in {"VIRTUAL_ENV", "PYTHONPATH"}
            }
            env["PATH"] = f"{base_python}:{env.get('PATH', '/usr/bin:/bin')}"
            subprocess.run(
                ["/bin/sh", "-ec", _rooted(instruction.args, root)],
                cwd=workdir, env=env, check=True, timeout=STEP_TIMEOUT_S,
            )  # fmt: skip


def _copy(instruction: Instruction, *, root: Path, workdir: Path, ignore: DockerIgnore) -> None:
    *sources, dest = shlex.split(instruction.args)
    target = root / dest.lstrip("/") if dest.startswith("/") else workdir / dest
    into_folder = dest.endswith("/") or len(sources) > 1
    for source in sources:
        origin = REPO / source
        assert not ignore.excludes(source), f"{source} is left out of the build context"
        if origin.is_dir():
            for path in sorted(origin.rglob("*")):
                relative = path.relative_to(REPO).as_posix()
                if path.is_file() and not ignore.excludes(relative):
                    copied = target / path.relative_to(origin)
                    copied.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, copied)
        else:
            copied = target / origin.name if into_folder else target
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, copied)
            if mode := instruction.flag("chmod"):
                copied.chmod(int(mode[0], 8))


def _bind_context_file(
    options: dict[str, str], *, root: Path, workdir: Path, ignore: DockerIgnore
) -> None:
    """`--mount=type=bind,source=FILE,target=PATH` from the build context: FILE at PATH."""
    source, target = options["source"], options["target"]
    assert not ignore.excludes(source), f"{source} is left out of the build context"
    origin = REPO / source
    assert origin.is_file(), f"{source}: only files of the context are bound here"
    placed = root / target.lstrip("/") if target.startswith("/") else workdir / target
    placed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(origin, placed)


def _rooted(command: str, root: Path) -> str:
    """A RUN line with every absolute path moved under `root`."""
    return re.sub(r"(?<![^\s=])/(?=[\w.])", f"{root}/", command)


def _host_paths(value: str, root: Path) -> str:
    """An ENV value with each path that the image has under `root` pointed there."""
    parts = value.split(":")
    return ":".join(
        str(root / part.lstrip("/")) if part.startswith("/") and (root / part.lstrip("/")).exists()
        else part
        for part in parts
    )  # fmt: skip


def _mounts_from(run: Instruction, stage: str) -> bool:
    return any(f"from={stage}" in mount.split(",") for mount in run.flag("mount"))


def _base_image_python(folder: Path) -> Path:
    """A folder whose `python` is this interpreter's base Python, as the image's is."""
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys._base_executable)} "$@"\n')
    python.chmod(0o755)
    return folder
