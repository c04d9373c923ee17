"""Real git servers on 127.0.0.1 for tests of sessions from a repository.

`GitServers` keeps bare repositories in one folder and serves them three ways, each
started on first use: `git daemon` (git://, pushes allowed), `git http-backend` behind a
small threaded HTTP server that wants HTTP basic auth (http://), and the folder itself
(file://). Repositories are made and changed with git's plumbing on the bare repository
(no work tree): `make_repo`, `commit`, `tag`.

    servers.make_repo("app", {"README.md": "hi\\n", "bin/run": Executable("#!/bin/sh\\n")})
    servers.commit("app", {"README.md": "hello\\n", "old.txt": None}, branch="feature")
    servers.git_url("app"), servers.http_url("app"), servers.file_url("app")

The HTTP server wants `servers.http_user` / `servers.http_password` on every request;
`servers.refuse_next = N` makes it answer the next N requests 401 whatever they carry;
`servers.requests` records each request's method, path and `Authorization` header.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

__all__ = ["Executable", "GitServers", "Gitlink", "Link", "entries", "git_env", "run_git"]

_AUTHOR = "Test Author"
_EMAIL = "author@example.com"


@dataclass(frozen=True)
class Link:
    """A symbolic link to `target`, as a file of a commit."""

    target: str


@dataclass(frozen=True)
class Executable:
    """A file with mode 100755."""

    content: str | bytes


@dataclass(frozen=True)
class Gitlink:
    """A submodule entry (mode 160000) at commit `commit`."""

    commit: str


FileSpec = str | bytes | Link | Executable | Gitlink | None


def entries(folder: Path) -> list[str]:
    """The names in `folder`, sorted (a test's look at a workspace or a data folder)."""
    return sorted(p.name for p in folder.iterdir())


def git_env(home: Path) -> dict[str, str]:
    """An environment for the tests' own git: no config of the machine's."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": _AUTHOR,
        "GIT_AUTHOR_EMAIL": _EMAIL,
        "GIT_COMMITTER_NAME": _AUTHOR,
        "GIT_COMMITTER_EMAIL": _EMAIL,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }


def run_git(
    *args: str,
    home: Path,
    cwd: Path | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` as the tests run it; CalledProcessError (with git's stderr) on failure."""
    got = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd or home,
        input=input,
        env={**git_env(home), **(env or {})},
        capture_output=True,
        timeout=60,
    )
    if check and got.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {got.stderr.decode()}")
    return got


class GitServers:
    """Bare repositories under `root`, served by git daemon, http-backend and file://."""

    def __init__(self, root: Path) -> None:
        self.root = root / "served"
        self.home = root / "git-home"
        self.root.mkdir(parents=True)
        self.home.mkdir()
        self.http_user = "tester"
        self.http_password = "s3cret-http-password-42"
        self.refuse_next = 0
        self.requests: list[tuple[str, str, str]] = []
        self._daemon: subprocess.Popen[bytes] | None = None
        self._daemon_port = 0
        self._http: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> GitServers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._daemon is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._daemon.pid, signal.SIGKILL)
            self._daemon.wait(timeout=30)
            self._daemon = None
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            assert self._http_thread is not None
            self._http_thread.join(timeout=30)
            self._http = None

    # URLs

    def git_url(self, name: str) -> str:
        return f"git://127.0.0.1:{self._daemon_started()}/{name}.git"

    def http_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self._http_started()}/{name}.git"

    def http_prefix(self) -> str:
        """The URL prefix of every repository served over HTTP (for a `Credential`)."""
        return f"http://127.0.0.1:{self._http_started()}/"

    def file_url(self, name: str) -> str:
        return f"file://{self.path(name)}"

    def path(self, name: str) -> Path:
        return self.root / f"{name}.git"

    def allow(self) -> tuple[str, ...]:
        """Allow patterns covering every repository served here, whichever way."""
        return ("git://127.0.0.1:*/**", "http://127.0.0.1:*/**", f"file://{self.root}/**")

    # Repositories

    def git(self, name: str, *args: str, input: bytes | None = None, **env: str) -> str:
        """`git ARGS` in the bare repository `name`; its stdout."""
        got = run_git(
            f"--git-dir={self.path(name)}", *args, home=self.home, input=input, env=env or None
        )
        return got.stdout.decode()

    def make_repo(
        self, name: str, files: dict[str, FileSpec], *, message: str = "Initial commit"
    ) -> Path:
        """A bare repository `name` with one commit of `files` on `main`; its path."""
        run_git("init", "-q", "--bare", "-b", "main", str(self.path(name)), home=self.home)
        self.commit(name, files, message=message)
        return self.path(name)

    def commit(
        self,
        name: str,
        files: dict[str, FileSpec],
        *,
        branch: str = "main",
        start: str = "",
        message: str = "A change",
    ) -> str:
        """A commit on `branch` (made from `start`, or from main, if it is new) changing
        `files` (None deletes one); its id."""
        parent = self.rev(name, f"refs/heads/{branch}") or (
            self.rev(name, start or "refs/heads/main") if start or branch != "main" else ""
        )
        index = self.home / f"index-{name}-{time.monotonic_ns()}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            if parent:
                self.git(name, "read-tree", parent, **env)
            for path, spec in files.items():
                if spec is None:
                    self.git(name, "update-index", "--force-remove", "--", path, **env)
                    continue
                mode, oid = self._object(name, spec)
                self.git(
                    name, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}", **env
                )
            tree = self.git(name, "write-tree", **env).strip()
        finally:
            index.unlink(missing_ok=True)
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        commit = self.git(name, *args).strip()
        self.git(name, "update-ref", f"refs/heads/{branch}", commit)
        return commit

    def tag(self, name: str, tag: str, rev: str = "main", *, annotated: bool = False) -> None:
        if annotated:
            self.git(name, "tag", "-a", "-m", f"Tag {tag}", tag, rev)
        else:
            self.git(name, "tag", tag, rev)

    def rev(self, name: str, rev: str) -> str:
        got = run_git(
            f"--git-dir={self.path(name)}",
            "rev-parse",
            "-q",
            "--verify",
            f"{rev}^{{commit}}",
            home=self.home,
            check=False,
        )
        return got.stdout.decode().strip()

    def _object(self, name: str, spec: FileSpec) -> tuple[str, str]:
        if isinstance(spec, Gitlink):
            return "160000", spec.commit
        if isinstance(spec, Link):
            mode, data = "120000", spec.target.encode()
        elif isinstance(spec, Executable):
            content = spec.content
            mode, data = "100755", content.encode() if isinstance(content, str) else content
        else:
            assert spec is not None
            mode, data = "100644", spec.encode() if isinstance(spec, str) else spec
        oid = self.git(name, "hash-object", "-w", "--stdin", input=data).strip()
        return mode, oid

    # Servers

    def _daemon_started(self) -> int:
        if self._daemon is not None:
            return self._daemon_port
        for _ in range(5):
            port = _free_port()
            proc = subprocess.Popen(
                [
                    "git",
                    "daemon",
                    "--export-all",
                    f"--base-path={self.root}",
                    "--listen=127.0.0.1",
                    f"--port={port}",
                    "--reuseaddr",
                    "--enable=receive-pack",
                    "--informative-errors",
                    str(self.root),
                ],
                env=git_env(self.home),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            if _wait_for_port(port, proc):
                self._daemon, self._daemon_port = proc, port
                return port
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        raise RuntimeError("git daemon did not start")

    def _http_started(self) -> int:
        if self._http is None:
            self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            self._http.daemon_threads = True
            self._http.owner = self  # type: ignore[attr-defined]
            self._http_thread = threading.Thread(
                target=self._http.serve_forever, args=(0.05,), daemon=True
            )
            self._http_thread.start()
        return self._http.server_address[1]

    def _authorized(self, header: str) -> bool:
        expected = base64.b64encode(f"{self.http_user}:{self.http_password}".encode()).decode()
        with self._lock:
            if self.refuse_next > 0:
                self.refuse_next -= 1
                return False
        return header == f"Basic {expected}"


class _Handler(BaseHTTPRequestHandler):
    """Hands each request to `git http-backend` as CGI would."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _serve(self) -> None:
        owner: GitServers = self.server.owner  # type: ignore[attr-defined]
        header = self.headers.get("Authorization", "")
        owner.requests.append((self.command, self.path, header))
        if not owner._authorized(header):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self._body()
        path, _, query = self.path.partition("?")
        env = {
            **git_env(owner.home),
            "GIT_PROJECT_ROOT": str(owner.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": owner.http_user,
            "REMOTE_ADDR": "127.0.0.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
        }
        if protocol := self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = env["HTTP_GIT_PROTOCOL"] = protocol
        if encoding := self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = encoding
        got = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60
        )
        head, _, payload = got.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        time.sleep(0.05)
    return False
