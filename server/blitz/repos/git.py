"""The one way Blitz runs git: a hardened process that executes nothing a repository or
the agent controls, bounded in time, output and disk.

Git runs on the server, outside the command box, over a repository that is hostile input
(its history, its `.gitattributes`, `.gitmodules`) and a workspace the agent writes. What
could make git execute something, or read configuration that would, is shut off here:

- **No configuration but ours.** The environment is built from nothing (only `PATH` is
  kept): no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`),
  an empty `HOME` and `XDG_CONFIG_HOME` of Blitz's, no system attributes. Every command
  names its git directory, one of Blitz's own (or a workspace's `.git` just made by it),
  so no repository is discovered from the working directory.
- **Nothing executed.** `-c` options, which outrank every config file and reach git's
  own child processes (`GIT_CONFIG_PARAMETERS`): hooks from `/dev/null`, no fsmonitor, no
  ssh, no pager, no credential helper but ours, every transport refused except the one
  the operation needs (`protocol.allow=never`), no redirects, no submodule recursion, no
  automatic gc (it would detach a process of its own). Diff commands also get
  `--no-ext-diff --no-textconv`. `diff.external` is not set to empty: git would then run
  an empty command and fail.
- **Bounded.** Each process runs in a process group of its own, killed whole at its
  time, on cancellation, or when the disk it fills passes the size bound (polled while it
  runs). Stdout is kept up to a bound, stderr's tail only.
- **Nothing secret in sight.** A credential reaches git only through our helper
  (`credential_helper.py`) and the environment of that one process: never an argument or
  a URL. What git printed is masked (`clean_message`) before it becomes an error.

Incoming objects are checked (`transfer.fsckObjects`): a malformed tree (`.git` paths,
`..`) is refused at the fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from blitz.redact import mask_known
from blitz.repos import disk
from blitz.repos.errors import RepoError
from blitz.repos.settings import Credential

__all__ = ["Git", "Ran", "SizeBound", "clean_message"]

# The configuration every git process gets, over anything else.
_HARDENED = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=/bin/false",
    "core.pager=cat",
    "core.attributesFile=/dev/null",
    "core.symlinks=true",
    "credential.helper=",
    "protocol.allow=never",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "transfer.fsckObjects=true",
    "http.followRedirects=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "color.ui=false",
    "init.defaultBranch=main",
    "advice.detachedHead=false",
    "advice.addEmbeddedRepo=false",
)
_HELPER = Path(__file__).with_name("credential_helper.py")
# How often the disk a running git fills is measured (seconds), at least.
_POLL = 0.25
_STDERR_KEEP = 16 * 1024
_MESSAGE_LINES = 4
_MESSAGE_MAX = 600
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^/\s@]+@", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Ran:
    code: int
    out: bytes
    err: bytes
    # stdout went past what was kept: git was stopped there (`cut_ok`).
    cut: bool = False

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")


@dataclass(frozen=True)
class SizeBound:
    """The folders a git process fills, and the bytes they may take together."""

    paths: tuple[Path, ...]
    limit: int


def clean_message(text: str) -> str:
    """What git printed, fit for an error a client sees: its last lines, without control
    characters, credentials in URLs or any secret the server knows."""
    lines = [_CONTROL.sub("", line).strip() for line in text.replace("\r", "\n").splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    said = "\n".join(lines[-_MESSAGE_LINES:])[-_MESSAGE_MAX:]
    return mask_known(_USERINFO.sub(r"\1", said))


class Git:
    """Runs git for Blitz: `home` is an empty folder of its own, `path` the PATH to find
    git by, `timeout` the seconds a process may run unless told otherwise."""

    def __init__(self, *, home: Path, path: str, timeout: float, author: str) -> None:
        self.home = home
        self.timeout = timeout
        name, _, email = author.partition("<")
        self._author = (name.strip() or "Blitz", email.rstrip(">").strip() or "blitz@localhost")
        self._env = {
            "PATH": path,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_PAGER": "cat",
            "GIT_EDITOR": "/bin/false",
            "GIT_CEILING_DIRECTORIES": str(home.parent),
            "LC_ALL": "C",
        }

    def author_env(self) -> dict[str, str]:
        """The environment that makes Blitz the author and committer of a commit."""
        name, email = self._author
        return {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }

    async def run(
        self,
        args: Sequence[str],
        *,
        git_dir: Path | None = None,
        work_tree: Path | None = None,
        index: Path | None = None,
        protocols: Sequence[str] = (),
        credential: tuple[Credential, str] | None = None,
        stdin: bytes | None = None,
        keep: int = 4 << 20,
        cut_ok: bool = False,
        size: SizeBound | None = None,
        env: Mapping[str, str] | None = None,
        ok: Sequence[int] = (0,),
        sink: Callable[[bytes], None] | None = None,
    ) -> Ran:
        """`git ARGS`, hardened. `protocols`: the transports it may use (none by default);
        `credential`: the credential and the source URL it is for; `keep`: stdout bytes
        kept (past them git is stopped: a `Ran` with `cut` when `cut_ok`, else a failure);
        `size`: the disk bound it runs under; `sink`: takes stdout as it comes instead
        (nothing is kept, however much it is). An exit code not in `ok` is
        `RepoError("failed")` with git's last words; a caller that sorts failures itself
        names the codes it looks at in `ok`."""
        argv = ["git", *self._options(protocols, credential)]
        if git_dir is not None:
            argv.append(f"--git-dir={git_dir}")
        if work_tree is not None:
            argv.append(f"--work-tree={work_tree}")
        argv += args
        proc_env = dict(self._env)
        if index is not None:
            proc_env["GIT_INDEX_FILE"] = str(index)
        if credential is not None:
            proc_env.update(_credential_env(*credential))
        proc_env.update(env or {})
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.home,
                env=proc_env,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise RepoError("failed", "git is not installed on the server") from None
        ran = _Running(proc, keep=keep, cut_ok=cut_ok, sink=sink)
        try:
            async with asyncio.timeout(self.timeout):
                await ran.finish(stdin, size)
        except TimeoutError:
            raise RepoError("timeout", f"git took longer than {self.timeout:g} s") from None
        finally:
            await ran.stop()
        if ran.oversize is not None:
            raise RepoError(
                "too_large", f"the repository takes more than {ran.oversize:,} bytes on disk"
            )
        if ran.overflow:
            raise RepoError("too_large", f"git's output is larger than {keep:,} bytes")
        result = Ran(proc.returncode or 0, bytes(ran.out), bytes(ran.err), cut=ran.cut)
        if result.code not in ok and not ran.cut:
            raise RepoError("failed", clean_message(result.err.decode("utf-8", "replace")))
        return result

    def _options(
        self, protocols: Sequence[str], credential: tuple[Credential, str] | None
    ) -> list[str]:
        options: list[str] = []
        for item in _HARDENED:
            options += ["-c", item]
        for name in protocols:
            options += ["-c", f"protocol.{name}.allow=always"]
        if credential is not None:
            helper = f"!{shlex.quote(sys.executable)} -I -S {shlex.quote(str(_HELPER))}"
            options += ["-c", f"credential.helper={helper}"]
        return options


def _credential_env(credential: Credential, url: str) -> dict[str, str]:
    protocol, _, rest = url.partition("://")
    return {
        "BLITZ_GIT_PROTOCOL": protocol,
        "BLITZ_GIT_HOST": rest.split("/", 1)[0],
        "BLITZ_GIT_USERNAME": credential.username,
        "BLITZ_GIT_PASSWORD": credential.password,
    }


class _Running:
    """A git process being read: stdout up to `keep`, stderr's tail, its disk watched."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        *,
        keep: int,
        cut_ok: bool,
        sink: Callable[[bytes], None] | None,
    ) -> None:
        self.proc = proc
        self.sink = sink
        self.keep = keep
        self.cut_ok = cut_ok
        self.out = bytearray()
        self.err = bytearray()
        self.cut = False
        self.overflow = False
        self.oversize: int | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def finish(self, stdin: bytes | None, size: SizeBound | None) -> None:
        proc = self.proc
        assert proc.stdout is not None and proc.stderr is not None
        self._tasks = [
            asyncio.create_task(self._read_out(proc.stdout)),
            asyncio.create_task(self._read_err(proc.stderr)),
        ]
        if stdin is not None:
            self._tasks.append(asyncio.create_task(self._write(stdin)))
        watch = asyncio.create_task(self._watch(size)) if size is not None else None
        try:
            await asyncio.gather(*self._tasks)
            await proc.wait()
        finally:
            if watch is not None:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
        if size is not None and self.oversize is None:
            used = await asyncio.to_thread(disk.tree_size, size.paths, stop_at=size.limit)
            if used > size.limit:
                self.oversize = size.limit

    async def stop(self) -> None:
        """Kill the process group unless it ended; reap it; end the readers."""
        if self.proc.returncode is None:
            self._kill()
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(self.proc.wait())
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def _read_out(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            if self.sink is not None:
                self.sink(chunk)
                continue
            room = self.keep - len(self.out)
            self.out += chunk[: max(room, 0)]
            if len(chunk) > room:
                if self.cut_ok:
                    self.cut = True
                else:
                    self.overflow = True
                self._kill()
                return

    async def _read_err(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            self.err += chunk
            if len(self.err) > _STDERR_KEEP:
                del self.err[: len(self.err) - _STDERR_KEEP]

    async def _write(self, data: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(data)
            await stdin.drain()
        stdin.close()

    async def _watch(self, size: SizeBound) -> None:
        while True:
            await asyncio.sleep(_POLL)
            used = await asyncio.to_thread(disk.tree_size, size.paths, stop_at=size.limit)
            if used > size.limit:
                self.oversize = size.limit
                self._kill()
                return
