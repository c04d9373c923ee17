"""`python -m bench.turn_cost [N] [--profile]`: the core's CPU per park and per resume.

A micro-benchmark of the core and the agent without a transport: one process opens the
whole core (`blitz.assembly.open_core`, SQLite, the demo model), starts N turns of
`$ echo parked-I` in N sessions at once and reads each to its `approval_request`, then
Decides each and reads it to `finished`, then runs a `hello I` turn in each (answered
without a tool). It prints the process's CPU per park, per resume (the `echo` commands are
children, not counted) and per answered turn. With `--profile`, both phases run
under pyinstrument (the `[bench]` extra) and its text report is printed: where a turn's
CPU goes, with no transport or client beside it. `make bench`'s `sessions` scenario
measures the same through a real server and clients.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import cast

from blitz.assembly import open_core
from blitz.config import Settings
from blitz.logs import configure_logging
from blitz.ports import CallContext, SessionPort
from blitz.process import settle_heap
from blitz.transport.methods import SESSION_SERVICE
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

_CTX = CallContext()
_SHOW_ALL = False


@contextlib.contextmanager
def _profiled(enabled: bool, label: str) -> Iterator[None]:
    if not enabled:
        yield
        return
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005, async_mode="disabled")
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()
        print(f"==== profile: {label}")
        print(profiler.output_text(unicode=False, color=False, show_all=_SHOW_ALL))


async def _until(events: AsyncIterator[t.TurnEvent], kind: str) -> t.TurnEvent:
    async for event in events:
        if event.WhichOneof("kind") == kind:
            return event
    raise RuntimeError(f"the stream ended before {kind}")


async def _measure(count: int, profile: bool, data: Path) -> None:
    settings = Settings(
        grpc_port=0,
        http_port=0,
        data_dir=data,
        database=str(data / "blitz.db"),
        workspace_root=data / "workspaces",
        log_level="warning",
    )
    async with open_core(settings) as opened:
        core = cast("SessionPort", opened.ports[SESSION_SERVICE.full_name])
        settle_heap()  # as `blitz serve` does once it is up
        sessions = [
            await core.create_session(s.CreateSessionRequest(model="demo"), _CTX)
            for _ in range(count + 5)
        ]
        warm, sessions = sessions[:5], sessions[5:]
        for session in warm:  # imports, caches, the first command
            await _whole_turn(core, session.id)

        streams = [
            core.run_turn(
                s.RunTurnRequest(session_id=x.id, turn=t.Turn(prompt=f"$ echo parked-{i}")),
                _CTX,
            )
            for i, x in enumerate(sessions)
        ]
        cpu = time.process_time()
        with _profiled(profile, f"{count} turns to their park"):
            parked = await asyncio.gather(*(_until(x, "approval_request") for x in streams))
        park = (time.process_time() - cpu) / count

        cpu = time.process_time()
        with _profiled(profile, f"{count} resumes"):
            for session, event in zip(sessions, parked, strict=True):
                await core.decide(
                    s.DecideRequest(
                        session_id=session.id,
                        request_id=event.approval_request.request_id,
                        decision=t.DECISION_ONCE,
                    ),
                    _CTX,
                )
            await asyncio.gather(*(_until(x, "finished") for x in streams))
        resume = (time.process_time() - cpu) / count
        for x in streams:
            await x.aclose()  # type: ignore[attr-defined]

        answered = [
            core.run_turn(s.RunTurnRequest(session_id=x.id, turn=t.Turn(prompt=f"hello {i}")), _CTX)
            for i, x in enumerate(sessions)
        ]
        cpu = time.process_time()
        with _profiled(profile, f"{count} turns answered at once (no park)"):
            await asyncio.gather(*(_until(x, "finished") for x in answered))
        plain = (time.process_time() - cpu) / count
        for x in answered:
            await x.aclose()  # type: ignore[attr-defined]
    print(
        f"{count} turns: {park * 1000:.2f} ms CPU per park, {resume * 1000:.2f} ms per resume,"
        f" {plain * 1000:.2f} ms per turn answered at once"
    )


async def _whole_turn(core: SessionPort, session_id: str) -> None:
    events = core.run_turn(
        s.RunTurnRequest(session_id=session_id, turn=t.Turn(prompt="$ echo warm")), _CTX
    )
    request = (await _until(events, "approval_request")).approval_request
    await core.decide(
        s.DecideRequest(
            session_id=session_id,
            request_id=request.request_id,
            decision=t.DECISION_ONCE,
        ),
        _CTX,
    )
    await _until(events, "finished")
    await events.aclose()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.turn_cost")
    parser.add_argument("count", nargs="?", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    configure_logging(log_format="json", level="warning")
    with tempfile.TemporaryDirectory() as data:
        asyncio.run(_measure(options.count, options.profile, Path(data)))


if __name__ == "__main__":
    main()
