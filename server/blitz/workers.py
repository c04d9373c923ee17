"""`blitz serve --workers N`: N processes serving behind the same ports.

One Python process uses one core. With `--workers N` the process started (the first
worker) starts N - 1 more, each a whole server on the same gRPC and HTTP ports: every
process binds them with SO_REUSEPORT and the kernel spreads new connections among them.
They share the store as replicas do (docs/operations.md): each claims the turns it runs
with a lease, follows the others' events through the store's announcements, and takes
over the turns of one that died. So only a store several processes share can have
workers: PostgreSQL. A SQLite file has one writer, the process that owns it (its recovery
at start assumes no other process runs turns in it), and `--workers` above 1 on SQLite is
refused at start.

The first worker reserves the ports before any of them serves (a port of 0 becomes a
free port then, the same for all), hands each worker the secrets it was handed itself
(process.py: through a pipe, never on the command line), restarts a worker that dies
while it serves, and at its end stops them (SIGTERM: each drains its own calls) and waits
for them. A worker ends with the first (PR_SET_PDEATHSIG) and serves no metrics port
(the first's alone). Nothing here knows what a server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from blitz.process import SECRETS_FD, Handed, secrets_pipe

__all__ = ["WORKER_OF", "Workers", "become_worker", "reserve_port"]

log = structlog.get_logger(__name__)

# The variable that makes a `blitz serve` a worker: the first worker's pid.
WORKER_OF = "BLITZ_WORKER_OF"
# How often the first looks for a worker that died, to start it again (seconds).
_RESTART_AFTER = 1.0
_PR_SET_PDEATHSIG = 1


def reserve_port(host: str, port: int) -> tuple[int, socket.socket]:
    """Bind `host:port` with SO_REUSEPORT without listening, so that the port (a free one
    for 0) stays this process's while the servers bind it too; the port and the socket,
    to close once they have."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock.getsockname()[1], sock


def become_worker(environ: Mapping[str, str]) -> bool:
    """Whether this process is a worker the first one started; if so, it ends with it."""
    first = environ.get(WORKER_OF)
    if not first:
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != int(first):
        os.kill(os.getpid(), signal.SIGTERM)  # the first ended before this one could know
    return True


@dataclass
class _Worker:
    number: int
    process: subprocess.Popen[bytes]


class Workers:
    """The workers beside this process: `argv` is the command line each runs (this
    process's own, with the reserved ports), `handed` the secrets each gets."""

    def __init__(
        self, count: int, argv: Sequence[str], handed: Handed, *, held: Sequence[socket.socket]
    ) -> None:
        """`held`: the sockets that reserve the ports, closed once this process serves."""
        self._count = count
        self._argv = list(argv)
        self._handed = handed
        self._held = list(held)
        self._workers: list[_Worker] = []
        self._stopping = False

    def start(self) -> None:
        """Start every worker (before this process serves: no thread runs yet)."""
        self._workers = [self._spawn(n) for n in range(1, self._count)]

    def _spawn(self, number: int) -> _Worker:
        env = {**os.environ, WORKER_OF: str(os.getpid())}
        fds: tuple[int, ...] = ()
        fd = secrets_pipe(self._handed)
        if fd is not None:
            env[SECRETS_FD] = str(fd)
            fds = (fd,)
        try:
            process = subprocess.Popen(
                [sys.executable, *self._argv], env=env, pass_fds=fds, stdin=subprocess.DEVNULL
            )
        finally:
            if fd is not None:
                os.close(fd)
        log.info("worker_started", worker=number, pid=process.pid)
        return _Worker(number, process)

    def release_ports(self) -> None:
        """This process serves on the ports: they need no reserving any more."""
        for sock in self._held:
            sock.close()
        self._held = []

    async def watch(self) -> None:
        """While this process serves: start again a worker that died."""
        self.release_ports()
        while not self._stopping:
            await asyncio.sleep(_RESTART_AFTER)
            for i, worker in enumerate(self._workers):
                code = worker.process.poll()
                if code is None or self._stopping:
                    continue
                log.warning("worker_died", worker=worker.number, pid=worker.process.pid, code=code)
                self._workers[i] = self._spawn(worker.number)

    def terminate(self) -> None:
        """SIGTERM to every worker (each drains its own calls); none is started again."""
        self._stopping = True
        for worker in self._workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> None:
        """Wait `timeout` s at most until every worker has ended, then SIGKILL the rest."""
        self.release_ports()
        self.terminate()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            try:
                worker.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
