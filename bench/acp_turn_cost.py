"""`python -m bench.acp_turn_cost [SESSIONS] [TURNS]`: Blitz's CPU per turn through an ACP agent.

Beside the built-in agent's. One process opens the whole core (`open_core`, SQLite) with
the tests' scripted ACP agent declared (tests/support/scripted_agent.py, one child
process per session, started before the measured phases), and measures this process's
CPU (`time.process_time`: the agents' own processes are not counted) over:

- answered turns: SESSIONS sessions at once, TURNS turns each, the agent saying a line in
  three chunks; the built-in agent's `hello` turns (the demo model) the same way;
- a park and its resume: a turn whose agent asks a permission, read to its
  `approval_request`, Decided, read to `finished`.

What it shows is Blitz's own cost of serving a turn for an ACP agent (the transport,
the mapping, the log) next to the built-in agent's (pydantic-ai, the demo model, the
tools), not the agents' CPU. docs/benchmarks.md keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

from blitz.assembly import open_core
from blitz.config import Settings
from blitz.config.agents import DeclaredAgent
from blitz.logs import configure_logging
from blitz.ports import CallContext, SessionPort
from blitz.transport.methods import SESSION_SERVICE
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

_CTX = CallContext()
_AGENT = Path(__file__).resolve().parents[1] / "tests" / "support" / "scripted_agent.py"
_SCRIPT = {
    "turns": [
        {
            "match": "park",
            "steps": [
                {
                    "permission": {
                        "id": "c1",
                        "kind": "execute",
                        "title": "echo",
                        "raw_input": {"command": "echo parked"},
                    }
                },
                {"say": "resumed"},
            ],
        },
        {"match": "", "steps": [{"say": "hello from the agent", "chunks": 3}]},
    ]
}


async def _events(core: SessionPort, session_id: str, text: str) -> AsyncIterator[t.TurnEvent]:
    request = s.RunTurnRequest(session_id=session_id, turn=t.Turn(text=text))
    async for event in core.run_turn(request, _CTX):
        yield event


async def _answered(core: SessionPort, session_id: str, text: str, turns: int) -> None:
    for _ in range(turns):
        async for event in _events(core, session_id, text):
            if event.HasField("finished") and event.finished.HasField("error"):
                raise RuntimeError(event.finished.error.message)


async def _park_resume(core: SessionPort, session_id: str, text: str) -> tuple[float, float]:
    """This process's CPU to park, and to resume (each measured around its own part)."""
    stream = _events(core, session_id, text)
    start = time.process_time()
    async for event in stream:
        if event.HasField("approval_request"):
            break
    parked = time.process_time() - start
    start = time.process_time()
    request = s.DecideRequest(
        session_id=session_id,
        request_id=event.approval_request.request_id,
        decision=t.DECISION_ONCE,
    )
    await core.decide(request, _CTX)
    async for event in stream:
        if event.HasField("finished"):
            break
    return parked, time.process_time() - start


async def _measure(sessions: int, turns: int, data: Path) -> dict[str, float]:
    (data / "script").mkdir()
    script = data / "script" / "script.json"
    script.write_text(json.dumps({**_SCRIPT, "record": str(data / "script" / "record.jsonl")}))
    data = data / "data"
    agent = DeclaredAgent(
        name="scripted",
        command=sys.executable,
        args=(str(_AGENT), str(script)),
        binds=(str(_AGENT.parents[2]), str(script.parent), sys.base_prefix),
    )
    settings = Settings(
        grpc_port=0,
        http_port=0,
        data_dir=data,
        database=str(data / "blitz.db"),
        workspace_root=data / "workspaces",
        log_level="warning",
        agents=(agent,),
        max_agent_processes=sessions + 1,
    )
    figures: dict[str, float] = {}
    async with open_core(settings) as opened:
        core = cast("SessionPort", opened.ports[SESSION_SERVICE.full_name])
        for name, request, text in (
            ("builtin", s.CreateSessionRequest(model="demo"), "hello"),
            ("acp", s.CreateSessionRequest(agent="scripted"), "hello"),
        ):
            ids = [(await core.create_session(request, _CTX)).id for _ in range(sessions)]
            # Warm: the agents started, imports and caches filled.
            await asyncio.gather(*(_answered(core, sid, text, 2) for sid in ids))
            start = time.process_time()
            await asyncio.gather(*(_answered(core, sid, text, turns) for sid in ids))
            figures[f"{name}_answered_ms"] = (
                (time.process_time() - start) / (sessions * turns) * 1000
            )
            if name == "acp":
                parks = [await _park_resume(core, sid, "park here") for sid in ids]
                figures["acp_park_ms"] = sum(p for p, _ in parks) / len(parks) * 1000
                figures["acp_resume_ms"] = sum(r for _, r in parks) / len(parks) * 1000
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", type=int, nargs="?", default=8)
    parser.add_argument("turns", type=int, nargs="?", default=25)
    args = parser.parse_args()
    configure_logging(level="warning", log_format="console")
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(_measure(args.sessions, args.turns, Path(folder)))
    for name, value in figures.items():
        print(f"{name:24} {value:8.2f}")
    ratio = figures["acp_answered_ms"] / figures["builtin_answered_ms"]
    print(f"{'acp / builtin answered':24} {ratio:8.2f}")


if __name__ == "__main__":
    main()
