"""The floor: the least a server of Blitz's own stack can do for a turn of Blitz's contract.

A grpc.aio server on uvloop speaking Blitz's `SessionService` for CreateSession, RunTurn
and Decide, with no core, no agent and no model: the turns it knows are the benchmark's,
`$ CMD` (which parks on a COMMAND approval, then runs CMD) and plain text (answered at
once). Per `$ echo x` turn it does every durable write the contract requires, and
nothing else, in the transactions the issue names:

1. the turn's row and its `accepted` (with `session_state` RUNNING), the session marked
   running;
2. the model's tool call (two partial `tool_call` events and the final one), the model
   call's ledger row and its `usage` event, the `approval_request` and its pending row,
   the parked turn's history, `session_state` PARKED, the session marked parked;
3. at Decide: the resolution stored with its pending row, `resolution` and
   `session_state` RUNNING;
4. once the command (spawned as Blitz does, through asyncio's subprocess: vfork) has run:
   `tool_output`, `tool_result`, the answer's partial and whole `text`, the second model
   call's ledger row and `usage`, `session_state` IDLE and `finished`, the turn and the
   session marked done.

It streams the same 17 events as Blitz, each stored first, on a SQLite file in WAL mode
with `synchronous=NORMAL`, as Blitz's store. A parked turn keeps its RunTurn coroutine
waiting; a Decide for a turn whose client left runs the rest itself. Nothing is masked,
capped, batched or recovered: it is a floor, not a server.

    python -m bench.floor_server PORT DB_PATH
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

import grpc
import uvloop

from blitz.v1 import session_pb2 as s
from blitz.v1 import session_pb2_grpc
from blitz.v1 import turn_pb2 as t

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, title TEXT, state INTEGER,
    turn_id TEXT, history BLOB);
CREATE TABLE IF NOT EXISTS turns (session_id TEXT, turn_id TEXT, state TEXT, turn BLOB,
    history BLOB, PRIMARY KEY (session_id, turn_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (session_id TEXT, seq INTEGER, turn_id TEXT, data BLOB,
    PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (session_id TEXT, request_id TEXT, turn_id TEXT,
    event BLOB, resolution TEXT, PRIMARY KEY (session_id, request_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger (session_id TEXT, turn_id TEXT, model TEXT,
    input INTEGER, output INTEGER, cost_usd REAL, time REAL);
"""
_RUNNING = t.SessionStateChange.SESSION_STATE_RUNNING
_PARKED = t.SessionStateChange.SESSION_STATE_PARKED
_IDLE = t.SessionStateChange.SESSION_STATE_IDLE


@dataclass
class _Parked:
    session_id: str
    turn_id: str
    request_id: str
    command: str
    resumed: asyncio.Future[list[t.TurnEvent]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    # Whether its RunTurn is still there to stream the rest.
    streamed: bool = True


class Floor(session_pb2_grpc.SessionServiceServicer):
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        self.seqs: dict[str, int] = {}
        self.parked: dict[tuple[str, str], _Parked] = {}

    # Storing

    def _commit(
        self,
        session_id: str,
        turn_id: str,
        events: Iterable[t.TurnEvent],
        writes: Iterable[tuple[str, tuple[object, ...]]] = (),
    ) -> list[t.TurnEvent]:
        """One transaction: the events, numbered and stamped, and `writes`."""
        now = time.time()
        stored = []
        self.db.execute("BEGIN IMMEDIATE")
        for event in events:
            seq = self.seqs[session_id] = self.seqs.get(session_id, 0) + 1
            event.seq, event.session_id, event.turn_id = seq, session_id, turn_id
            event.time.FromNanoseconds(int(now * 1e9))
            self.db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?)",
                (session_id, seq, turn_id, event.SerializeToString()),
            )
            stored.append(event)
        for sql, args in writes:
            self.db.execute(sql, args)
        self.db.execute("COMMIT")
        return stored

    def _state(self, session_id: str, state: int) -> tuple[str, tuple[object, ...]]:
        return "UPDATE sessions SET state = ? WHERE id = ?", (state, session_id)

    def _ledger(self, session_id: str, turn_id: str) -> tuple[str, tuple[object, ...]]:
        return (
            "INSERT INTO ledger VALUES (?, ?, 'demo', 20, 15, 0.0, ?)",
            (session_id, turn_id, time.time()),
        )

    # Calls

    async def CreateSession(self, request, context):
        session_id = "s_" + uuid.uuid4().hex
        self.db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, '', NULL)",
            (session_id, request.title, s.SESSION_STATE_IDLE),
        )
        return s.Session(id=session_id, title=request.title, state=s.SESSION_STATE_IDLE)

    async def RunTurn(self, request, context) -> AsyncIterator[t.TurnEvent]:
        sid, tid = request.session_id, "t_" + uuid.uuid4().hex
        turn = request.turn
        started = self._commit(
            sid,
            tid,
            [
                t.TurnEvent(accepted=t.Accepted(turn=turn)),
                t.TurnEvent(session_state=t.SessionStateChange(state=_RUNNING, turn_id=tid)),
            ],
            [
                (
                    "INSERT INTO turns VALUES (?, ?, 'running', ?, NULL)",
                    (sid, tid, turn.SerializeToString()),
                ),
                self._state(sid, s.SESSION_STATE_RUNNING),
            ],
        )
        for event in started:
            yield event
        if not turn.text.startswith("$ "):
            for event in self._answer(sid, tid, turn.text):
                yield event
            return
        parked = _Parked(sid, tid, "call_" + uuid.uuid4().hex[:12], turn.text[2:])
        for event in self._park(parked):
            yield event
        self.parked[sid, parked.request_id] = parked
        try:
            resumed = await parked.resumed
        except asyncio.CancelledError:
            parked.streamed = False  # its client left: Decide runs the rest
            raise
        for event in resumed:
            yield event
        async for event in self._run(parked):
            yield event

    async def Decide(self, request, context):
        parked = self.parked.pop((request.session_id, request.request_id), None)
        if parked is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such request")
        assert parked is not None
        resolution = t.Resolution(
            request_id=parked.request_id, decision=request.decision, via="decide"
        )
        resumed = self._commit(
            parked.session_id,
            parked.turn_id,
            [
                t.TurnEvent(resolution=resolution),
                t.TurnEvent(
                    session_state=t.SessionStateChange(state=_RUNNING, turn_id=parked.turn_id)
                ),
            ],
            [
                (
                    "UPDATE pending SET resolution = ? WHERE session_id = ? AND request_id = ?",
                    ('{"decision": 2}', parked.session_id, parked.request_id),
                ),
                (
                    "UPDATE turns SET state = 'running' WHERE session_id = ? AND turn_id = ?",
                    (parked.session_id, parked.turn_id),
                ),
                self._state(parked.session_id, s.SESSION_STATE_RUNNING),
            ],
        )
        if parked.streamed and not parked.resumed.done():
            parked.resumed.set_result(resumed)
        else:
            asyncio.get_running_loop().create_task(self._run_unstreamed(parked))
        return s.DecideResponse()

    # A turn's steps

    def _park(self, parked: _Parked) -> list[t.TurnEvent]:
        sid, tid, rid = parked.session_id, parked.turn_id, parked.request_id
        args = json.dumps({"command": parked.command})
        approval = t.ApprovalRequest(
            request_id=rid,
            tool="run_command",
            kind=t.ACTION_KIND_COMMAND,
            detail=parked.command,
            scope_label=f"command: {parked.command}",
        )
        called = t.ToolCall(id=rid, name="run_command")
        called.args.update({"command": parked.command})
        events = [
            t.TurnEvent(tool_call=t.ToolCall(id=rid, name="run_command", partial=True)),
            t.TurnEvent(
                tool_call=t.ToolCall(id=rid, name="run_command", args=called.args, partial=True)
            ),
            t.TurnEvent(usage=t.Usage(calls=1, input=20, output=15, model="demo", priced=True)),
            t.TurnEvent(tool_call=called),
            t.TurnEvent(approval_request=approval),
            t.TurnEvent(session_state=t.SessionStateChange(state=_PARKED, turn_id=tid)),
        ]
        history = json.dumps([{"prompt": parked.command}, {"call": rid, "args": args}])
        return self._commit(
            sid,
            tid,
            events,
            [
                self._ledger(sid, tid),
                (
                    "INSERT INTO pending VALUES (?, ?, ?, ?, NULL)",
                    (sid, rid, tid, events[4].SerializeToString()),
                ),
                (
                    "UPDATE turns SET state = 'parked', history = ?"
                    " WHERE session_id = ? AND turn_id = ?",
                    (history.encode(), sid, tid),
                ),
                self._state(sid, s.SESSION_STATE_PARKED),
            ],
        )

    async def _run(self, parked: _Parked) -> AsyncIterator[t.TurnEvent]:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", parked.command, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        output, _ = await proc.communicate()
        text = output.decode(errors="replace")
        result = t.ToolResult(id=parked.request_id, name="run_command")
        result.result.update({"output": text, "exit_code": proc.returncode})
        for event in self._answer(
            parked.session_id,
            parked.turn_id,
            f"Ran it: {text.strip()}",
            before=[
                t.TurnEvent(tool_output=t.ToolOutput(id=parked.request_id, output=text)),
                t.TurnEvent(tool_result=result),
            ],
        ):
            yield event

    async def _run_unstreamed(self, parked: _Parked) -> None:
        async for _ in self._run(parked):
            pass

    def _answer(
        self, sid: str, tid: str, text: str, before: Iterable[t.TurnEvent] = ()
    ) -> list[t.TurnEvent]:
        events = [
            *before,
            t.TurnEvent(text=t.Text(text=text, partial=True)),
            t.TurnEvent(text=t.Text(text=text, repeat=True)),
            t.TurnEvent(usage=t.Usage(calls=1, input=28, output=4, model="demo", priced=True)),
            t.TurnEvent(session_state=t.SessionStateChange(state=_IDLE, turn_id=tid)),
            t.TurnEvent(finished=t.TurnFinished(output=text)),
        ]
        return self._commit(
            sid,
            tid,
            events,
            [
                self._ledger(sid, tid),
                (
                    "UPDATE turns SET state = 'finished', history = NULL"
                    " WHERE session_id = ? AND turn_id = ?",
                    (sid, tid),
                ),
                (
                    "UPDATE sessions SET state = ?, history = ? WHERE id = ?",
                    (s.SESSION_STATE_IDLE, text.encode(), sid),
                ),
            ],
        )


async def serve(port: int, path: str) -> None:
    server = grpc.aio.server()
    session_pb2_grpc.add_SessionServiceServicer_to_server(Floor(path), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


def main() -> None:
    uvloop.run(serve(int(sys.argv[1]), sys.argv[2]))


if __name__ == "__main__":
    main()
