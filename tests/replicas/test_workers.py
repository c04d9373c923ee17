"""`blitz serve --workers N`: several processes behind the same ports, sharing PostgreSQL.

Each new connection lands on one of the workers (SO_REUSEPORT); what one starts another
can answer, as between replicas. A worker that dies is started again, and all of them end
with the first. On SQLite, more than one worker is refused at start.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import httpx
from prometheus_client.parser import text_string_to_metric_families
from support.replicas import Replica, replica_env
from support.wire import open_wire

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1.session_pb2_grpc import SessionServiceStub


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _workers(replica: Replica) -> list[int]:
    """The workers the first started, by the log: the living ones' pids."""
    pids = [
        int(str(line["pid"])) for line in replica.lines() if line.get("event") == "worker_started"
    ]
    return [pid for pid in pids if pid in _children(replica.pid)]


def _scrape(replica: Replica) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The first worker's metrics port, by sample name and labels."""
    [port] = {
        line["metrics_port"]
        for line in replica.lines()
        if line.get("event") == "serving" and line.get("metrics_port")
    }
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _eventually(check: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


async def _wait_serving(replica: Replica, count: int) -> None:
    def serving() -> bool:
        return sum(1 for line in replica.lines() if line.get("event") == "serving") >= count

    await asyncio.to_thread(_eventually, serving, f"{count} servings")


async def test_two_workers_share_the_port_and_each_others_turns(replicas):
    [a] = replicas("a", extra=["--workers=2"])
    await _wait_serving(a, 2)
    [worker] = _workers(a)
    before = {pid: _cpu_ticks(pid) for pid in (a.pid, worker)}
    # Sixteen channels, each on a connection of its own (no subchannel shared between
    # them): the kernel spreads the connections over both workers.
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [grpc.aio.insecure_channel(a.grpc_target, options=options) for _ in range(16)]
    try:
        stubs = [SessionServiceStub(channel) for channel in channels]
        sessions = [await stub.CreateSession(s.CreateSessionRequest()) for stub in stubs]
        for stub, session in zip(stubs, sessions, strict=True):
            request = s.RunTurnRequest(session_id=session.id, turn=t.Turn(text="stream: 200"))
            events = [event async for event in stub.RunTurn(request)]
            assert events[-1].HasField("finished") and not events[-1].finished.HasField("error")
        # A turn parked through one connection is answered through each other one in turn
        # until one takes it: the store is theirs to share, whichever worker holds it.
        sid = sessions[0].id
        run = stubs[0].RunTurn(s.RunTurnRequest(session_id=sid, turn=t.Turn(text="$ echo across")))
        async for event in run:
            if event.HasField("approval_request"):
                break
        rid = event.approval_request.request_id
        await stubs[-1].Decide(
            s.DecideRequest(session_id=sid, request_id=rid, decision=t.DECISION_ONCE)
        )
        async with asyncio.timeout(60):
            rest = [e async for e in run]
        assert "across" in rest[-1].finished.output
    finally:
        for channel in channels:
            await channel.close()
    used = {pid: _cpu_ticks(pid) - before[pid] for pid in before}
    assert all(ticks > 0 for ticks in used.values()), f"both served: {used}"


async def test_a_worker_that_dies_is_started_again_and_all_end_with_the_first(replicas):
    [a] = replicas("a", extra=["--workers=2"])
    await _wait_serving(a, 2)
    [worker] = _workers(a)
    os.kill(worker, 9)
    await asyncio.to_thread(
        _eventually, lambda: [p for p in _workers(a) if p != worker], "a worker started again"
    )
    assert any(line.get("event") == "worker_died" for line in a.lines())
    await _wait_serving(a, 3)
    client = open_wire("grpc", a)
    try:
        session = await client.create_session()
        events = await client.run_all(session.id, "hello")
        assert events[-1].HasField("finished")
    finally:
        await client.close()
    [again] = _workers(a)
    assert a.stop() == 0
    await asyncio.to_thread(_eventually, lambda: _state(again) in ("gone", "Z"), "it ended")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_several_workers_on_sqlite_are_refused_at_start(tmp_path):
    done = subprocess.run(
        [
            sys.executable, "-m", "blitz.cli", "serve", "--workers=2",
            "--grpc-port=0", "--http-port=0", f"--data-dir={tmp_path}",
        ],
        env=replica_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--workers 2 needs a store several processes share" in done.stderr
    assert "SQLite" in done.stderr


async def test_one_sigterm_to_the_first_drains_every_worker(replicas):
    """One SIGTERM: every process drains (none logs a second signal), and all end with 0."""
    [a] = replicas("a", extra=["--workers=3"])
    await _wait_serving(a, 3)
    workers = _workers(a)
    assert len(workers) == 2
    assert a.stop() == 0
    lines = a.lines()
    assert not [line for line in lines if "second signal" in str(line.get("event"))], a.log()
    assert sum(1 for line in lines if line.get("event") == "draining") == 3, a.log()
    assert sum(1 for line in lines if line.get("event") == "stopped") == 3, a.log()


CREATE = frozenset(
    {
        ("grpc_type", "unary"),
        ("grpc_service", "blitz.v1.SessionService"),
        ("grpc_method", "CreateSession"),
        ("grpc_code", "OK"),
    }
)


async def test_one_scrape_covers_every_worker_and_each_line_names_its_worker(replicas):
    [a] = replicas("a", extra=["--workers=2", "--metrics-port=0"])
    await _wait_serving(a, 2)
    [worker] = _workers(a)
    before = {pid: _cpu_ticks(pid) for pid in (a.pid, worker)}
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [grpc.aio.insecure_channel(a.grpc_target, options=options) for _ in range(16)]
    try:
        for channel in channels:
            stub = SessionServiceStub(channel)
            session = await stub.CreateSession(s.CreateSessionRequest())
            request = s.RunTurnRequest(session_id=session.id, turn=t.Turn(text="hello"))
            assert [e async for e in stub.RunTurn(request)][-1].HasField("finished")
    finally:
        for channel in channels:
            await channel.close()
    used = {pid: _cpu_ticks(pid) - before[pid] for pid in before}
    assert all(ticks > 0 for ticks in used.values()), f"both served: {used}"
    samples = await asyncio.to_thread(_scrape, a)
    assert samples[("grpc_server_handled_total", CREATE)] == 16, "every worker's calls"
    assert samples[("blitz_turns_started_total", frozenset({("kind", "main")}))] == 16
    assert not any(name.startswith("process_") for name, _ in samples), "one process's"
    # Each worker writes its live gauges every second: the last turn's end shows soon.
    running = ("blitz_turns_running", frozenset())
    await asyncio.to_thread(_eventually, lambda: _scrape(a)[running] == 0, "none running", 10)

    # A worker killed: what it counted stays in the sums; its restart adds to them.
    os.kill(worker, 9)
    await asyncio.to_thread(
        _eventually, lambda: [p for p in _workers(a) if p != worker], "a worker started again"
    )
    await _wait_serving(a, 3)
    samples = await asyncio.to_thread(_scrape, a)
    assert samples[("grpc_server_handled_total", CREATE)] == 16
    assert a.stop() == 0

    lines = a.lines()
    assert all("worker" in line for line in lines), [x for x in lines if "worker" not in x][:3]
    assert {line["worker"] for line in lines} == {0, 1}
    assert {line["worker"] for line in lines if line.get("event") == "serving"} == {0, 1}
    assert {line["worker"] for line in lines if line.get("event") == "worker_started"} == {0}


def test_ctrl_c_in_a_terminal_drains_every_worker_once(postgres_database, tmp_path):
    """SIGINT to the whole process group, as a terminal sends it: it reaches the first
    alone (each worker has a group of its own), which tells each worker once."""
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "blitz.cli", "serve", "--workers=2", "--log-format=json",
                "--grpc-port=0", "--http-port=0", f"--data-dir={tmp_path / 'data'}",
                f"--database={postgres_database}", "--drain-timeout=3",
            ],
            env=replica_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=sink, start_new_session=True,
        )  # fmt: skip
    try:

        def lines() -> list[dict[str, object]]:
            text = log.read_text(errors="replace")
            return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

        def serving() -> bool:
            return sum(1 for line in lines() if line.get("event") == "serving") >= 2

        _eventually(serving, "both serving")
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    seen = lines()
    assert not [line for line in seen if "second signal" in str(line.get("event"))], seen
    assert sorted(line["worker"] for line in seen if line.get("event") == "stopped") == [0, 1]
