"""`blitz serve --workers N`: N processes serving behind the same ports.

One Python process uses one core. With `--workers N` the process started (the first
worker, number 0) starts N - 1 more (1 to N - 1), each a whole server on the same gRPC and
HTTP ports: every process binds them with SO_REUSEPORT and the kernel spreads new
connections among them. They share the store as replicas do (docs/operations.md): each
claims the turns it runs with a lease, follows the others' events through the store's
announcements, and takes over the turns of one that died. So only a store several
processes share can have workers: PostgreSQL. A SQLite file has one writer, the process
that owns it (its recovery at start assumes no other process runs turns in it), and
`--workers` above 1 on SQLite is refused at start.

Before any of the server's modules is imported, `prepare_process` says which worker this
process is (every log line names it) and, in the first, makes the empty folder where the
workers' metrics meet (prometheus-client's multiprocess mode, `blitz.metrics`): the
workers inherit it with the environment, and it is removed when the first exits.

The first worker reserves the ports before any of them serves (a port of 0 becomes a
free port then, the same for all), hands each worker the secrets it was handed itself
(process.py: through a pipe, never on the command line), restarts a worker that dies
while it serves (after a wait that doubles with each death in a row), and gives up after
a few deaths in a row: then the whole server stops, and exits with 1, rather than serve on
short of workers unseen. Each worker has a process group of its own, so that a signal
meant for the server (a terminal's Ctrl-C) reaches only the first, which passes it on:
at its end it tells each worker once to stop (SIGTERM: each drains its own calls), a
second time only when it got a second signal itself (each stops without draining), and
waits for them. A worker ends with the first (PR_SET_PDEATHSIG) and serves no metrics
port (the first's scrape covers every worker). Nothing here knows what a server does.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import structlog

from blitz.process import SECRETS_FD, Handed, secrets_pipe

__all__ = [
    "WORKER_NUMBER",
    "WORKER_OF",
    "Workers",
    "become_worker",
    "prepare_process",
    "reserve_port",
]

log = structlog.get_logger(__name__)

# The variable that makes a `blitz serve` a worker: the first worker's pid.
WORKER_OF = "BLITZ_WORKER_OF"
# A worker's number (1 to N - 1), for its log lines.
WORKER_NUMBER = "BLITZ_WORKER_NUMBER"
# Where prometheus-client's multiprocess mode keeps every process's values: read by the
# library when it is imported.
_METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"
# How often the first looks for a worker that died (seconds).
_LOOK_EVERY = 1.0
# A worker that dies is started again after a wait that doubles with each death in a row,
# from the first to the longest; one that served this long before it died starts the
# count again. After this many deaths in a row it is given up, said in an error line, and
# the server stops: a worker that cannot start (a bad setting, a full disk) must not be
# retried for ever, nor leave the server short of a worker unseen.
_FIRST_WAIT = 1.0
_LONGEST_WAIT = 30.0
_SERVED_WELL = 60.0
_GIVE_UP_AFTER = 8
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


def prepare_process(count: int, environ: MutableMapping[str, str]) -> int | None:
    """Before the server's modules are imported: this process's worker number (0 for the
    first of several; None when it is the only process). The first of several points the
    metrics' multiprocess mode at a new empty folder in `environ`, which its workers
    inherit and which goes when it exits; a single process serves its metrics plainly,
    whatever the environment said."""
    number = environ.get(WORKER_NUMBER)
    if environ.get(WORKER_OF) and number is not None:
        return int(number)
    if count <= 1:
        environ.pop(_METRICS_DIR, None)
        return None
    folder = tempfile.mkdtemp(prefix="blitz-metrics-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    environ[_METRICS_DIR] = folder
    return 0


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
    started: float = 0.0
    # Deaths in a row (each within _SERVED_WELL of its start), and when to start it again.
    deaths: int = 0
    restart_at: float | None = None
    given_up: bool = False
    # Told to stop (SIGTERM), once: a second SIGTERM would cut its drain short.
    told: bool = False


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
        self._given_up = False

    @property
    def given_up(self) -> bool:
        """A worker died too many times in a row: the server must stop, and fail."""
        return self._given_up

    def start(self) -> None:
        """Start every worker (before this process serves: no thread runs yet)."""
        self._workers = [self._spawn(n) for n in range(1, self._count)]

    def _spawn(self, number: int, attempt: int = 0) -> _Worker:
        """Start worker `number`; `attempt`: its restarts in a row (0: its first start)."""
        env = {**os.environ, WORKER_OF: str(os.getpid()), WORKER_NUMBER: str(number)}
        fds: tuple[int, ...] = ()
        fd = secrets_pipe(self._handed)
        if fd is not None:
            env[SECRETS_FD] = str(fd)
            fds = (fd,)
        try:
            # A process group of its own: a terminal's Ctrl-C (or a kill of the first's
            # group) reaches the first alone, which tells each worker once.
            process = subprocess.Popen(
                [sys.executable, *self._argv],
                env=env,
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                process_group=0,
            )
        finally:
            if fd is not None:
                os.close(fd)
        log.info("worker_started", number=number, pid=process.pid, attempt=attempt)
        return _Worker(number, process, started=time.monotonic())

    def release_ports(self) -> None:
        """This process serves on the ports: they need no reserving any more."""
        for sock in self._held:
            sock.close()
        self._held = []

    async def watch(self) -> None:
        """While this process serves: start again a worker that died, after a wait that
        grows with its deaths in a row. Returns when one is given up, after
        `_GIVE_UP_AFTER` of them: the server is to stop (`given_up`)."""
        self.release_ports()
        while not self._stopping:
            await asyncio.sleep(_LOOK_EVERY)
            for i, worker in enumerate(self._workers):
                if self._stopping:
                    return
                restarted = self._look_after(worker, time.monotonic())
                if restarted is not None:
                    self._workers[i] = restarted
                if worker.given_up:
                    self._given_up = True
                    return

    def _look_after(self, worker: _Worker, now: float) -> _Worker | None:
        """The worker started again in `worker`'s place when its wait is over; None when it
        still serves, still waits, or was given up."""
        if worker.given_up:
            return None
        if worker.restart_at is None:
            code = worker.process.poll()
            if code is None:
                return None
            _ended(worker.process.pid)
            served = now - worker.started
            worker.deaths = 1 if served >= _SERVED_WELL else worker.deaths + 1
            if worker.deaths > _GIVE_UP_AFTER:
                worker.given_up = True
                log.error(
                    "worker_given_up",
                    number=worker.number,
                    pid=worker.process.pid,
                    code=code,
                    deaths_in_a_row=worker.deaths,
                    then="the server stops, and exits with 1",
                )
                return None
            wait = min(_LONGEST_WAIT, _FIRST_WAIT * 2 ** (worker.deaths - 1))
            worker.restart_at = now + wait
            log.warning(
                "worker_died",
                number=worker.number,
                pid=worker.process.pid,
                code=code,
                served_s=round(served, 1),
                attempt=worker.deaths,
                of=_GIVE_UP_AFTER,
                restart_in_s=wait,
            )
        if now < worker.restart_at:
            return None
        restarted = self._spawn(worker.number, attempt=worker.deaths)
        restarted.deaths = worker.deaths
        return restarted

    def terminate(self) -> None:
        """SIGTERM to every worker not yet told (each drains its own calls); none is started
        again. Safe to call again: no worker gets a second SIGTERM."""
        self._stopping = True
        for worker in self._workers:
            if not worker.told and worker.process.poll() is None:
                worker.told = True
                worker.process.send_signal(signal.SIGTERM)

    def hurry(self) -> None:
        """SIGTERM once more to every worker told already: the first got a second signal,
        and so does each worker, which stops without draining."""
        for worker in self._workers:
            if worker.told and worker.process.poll() is None:
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
            _ended(worker.process.pid)


def _ended(pid: int) -> None:
    """A worker's process ended: its live gauges go from the shared metrics. (blitz.metrics
    is imported here, not above: it must come after `prepare_process`.)"""
    from blitz import metrics

    metrics.process_ended(pid)
