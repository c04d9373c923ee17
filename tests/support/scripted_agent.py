"""A scripted ACP agent for the tests: `python scripted_agent.py SCRIPT_JSON_PATH`.

Blitz runs ACP agents as child processes and drives them over stdio; its tests need an
agent that says and asks exactly what each test wants, misbehaves on cue, and tells
afterwards what it was sent. This is that agent: an ACP agent built on the SDK's
connection (JSON-RPC framing, ids, incoming requests validated and routed), protocol
version 1, whose every move comes from a JSON script that it re-reads on each request, so
that a test may change it between turns. tests/support/acp_script.py writes scripts and
reads records; tests/acp/test_scripted_agent.py shows every step at work.

It imports only the standard library and `acp`: it runs as a program of its own, with no
Blitz and no test code on its path.

What the agent sends is built here as wire JSON (camelCase, the way the script spells
it) and sent through the SDK's connection without the SDK's models, so that a test gets
exactly what it scripted, invalid on purpose included; lines that are not JSON-RPC at all
(`raw`, `raw_bytes`) are written through the same StreamWriter the SDK writes through,
one whole line per write, after everything sent before them.

The script, every key optional:

    record            path of a JSON-lines file: every message received ({"dir": "in",
                      "method", "params"}) and every answer to the agent's own requests
                      ({"dir": "result", "method", "result"} / {"dir": "error", "method",
                      "error": {"code", "message", "data"?}}), flushed at once
    protocol_version  what initialize answers (1)
    load_session      agentCapabilities.loadSession, and whether session/load works (true)
    prompt_capabilities  {"image", "audio", "embedded_context"} (image and embedded false)
    agent_info        initialize's agentInfo ({"name": "scripted", "version": "1.0"})
    auth_methods      initialize's authMethods ([])
    modes             {"current": id, "available": [{"id", "name", "description"?}]}, or null
    commands          [{"name", "description", "hint"?}]: an available_commands_update
                      sent after session/new's and session/load's answers
    init, new_session, load   misbehave in that request: {"stderr": text}, {"sleep": s},
                      {"hang": true}, {"crash": code}, {"error": {"code", "message"}}
    turns             [{"match": substring, "steps": [...]}]: a prompt runs the first turn
                      whose match is in its text (its text blocks joined by newlines); ""
                      matches any; no match says "no script for this prompt", end_turn

The steps, one key each (plus that key's options), are documented in `Turn`.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.agent.connection import AgentSideConnection
from acp.connection import Connection, StreamDirection, StreamEvent
from acp.schema import TextContentBlock
from acp.stdio import stdio_streams

DEFAULT_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]

# The id of the request a handler task is answering: the receive loop sets it before the
# SDK creates the handler's task, which copies it (see `ScriptedAgent.observe`).
_request_id: contextvars.ContextVar[Any] = contextvars.ContextVar("request_id", default=None)


def camel(key: str) -> str:
    """`raw_input` -> `rawInput`; a key already camelCase stays as it is."""
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camelized(fields: dict[str, Any]) -> dict[str, Any]:
    """The same fields with camelCase keys (one level deep: values are left alone)."""
    return {camel(key): value for key, value in fields.items()}


def write_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def crash(code: int) -> None:
    """Exit at once, as a crashing agent does: no answer, no goodbye (the record is already
    flushed, every line as it was written)."""
    sys.stderr.flush()
    os._exit(code)


def freeze() -> None:
    """Never answer anything again: block the event loop, so that not even stdin's end or a
    cancel is noticed. Only a signal ends the process."""
    sys.stderr.flush()
    while True:
        time.sleep(3600)


class Session:
    """One session: its folder, its mode, what was said (saved after every turn under
    `$HOME/.scripted-agent/<id>.json`, for session/load), and the cancel of its prompt."""

    def __init__(self, session_id: str, cwd: str, mode: str | None) -> None:
        self.id = session_id
        self.cwd = cwd
        self.mode = mode
        self.history: list[dict[str, str]] = []
        self.cancelled = asyncio.Event()

    @staticmethod
    def path(session_id: str) -> Path:
        return Path(os.environ.get("HOME", "/tmp")) / ".scripted-agent" / f"{session_id}.json"

    def save(self) -> None:
        path = self.path(self.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"cwd": self.cwd, "mode": self.mode, "history": self.history}
        path.write_text(json.dumps(data))


class ScriptedAgent:
    """The ACP agent: the SDK routes each request to a method here (by name)."""

    def __init__(self, script_path: Path) -> None:
        self.script_path = script_path
        self.sessions: dict[str, Session] = {}
        self.conn: AgentSideConnection | None = None
        self.writer: asyncio.StreamWriter | None = None
        # Work to start once the answer to a request (by its id) is written.
        self.after_answer: dict[Any, list[Any]] = {}
        self.background: set[asyncio.Task[None]] = set()

    # The plumbing.

    def script(self) -> dict[str, Any]:
        return json.loads(self.script_path.read_text())

    @property
    def rpc(self) -> Connection:
        """The SDK's JSON-RPC connection under AgentSideConnection: it sends what it is given."""
        assert self.conn is not None
        return self.conn._conn

    def on_connect(self, conn: AgentSideConnection) -> None:
        self.conn = conn

    def record(self, entry: dict[str, Any]) -> None:
        path = self.script().get("record")
        if not path:
            return
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()

    def observe(self, event: StreamEvent) -> None:
        """Every message the connection reads or writes: those received are recorded; an
        answer written starts what waited for it."""
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            if "method" in message:
                entry = {"dir": "in", "method": message["method"], "params": message.get("params")}
                self.record(entry)
                _request_id.set(message.get("id"))
            return
        if "method" not in message and message.get("id") in self.after_answer:
            for job in self.after_answer.pop(message["id"]):
                task = asyncio.get_running_loop().create_task(job)
                self.background.add(task)
                task.add_done_callback(self.background.discard)

    def after_this_answer(self, job: Any) -> None:
        """Run the coroutine `job` once the answer to the current request is written (as
        real agents send available commands after session/new's answer, not before)."""
        self.after_answer.setdefault(_request_id.get(), []).append(job)

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        await self.rpc.send_notification(
            "session/update", {"sessionId": session_id, "update": update}
        )

    async def request(self, method: str, params: dict[str, Any]) -> tuple[bool, Any]:
        """Ask the client; (True, result) or (False, error), either recorded."""
        try:
            result = await self.rpc.send_request(method, params)
        except RequestError as exc:
            error: dict[str, Any] = {"code": exc.code, "message": str(exc)}
            if exc.data is not None:
                error["data"] = exc.data
            self.record({"dir": "error", "method": method, "error": error})
            return False, error
        self.record({"dir": "result", "method": method, "result": result})
        return True, result

    async def write_raw(self, data: bytes) -> None:
        """One whole line on stdout beside the SDK's own (a single write is never split
        or interleaved with another)."""
        assert self.writer is not None
        self.writer.write(data)
        await self.writer.drain()

    async def misbehave(self, how: dict[str, Any] | None) -> None:
        if not how:
            return
        if "stderr" in how:
            write_stderr(how["stderr"])
        if "sleep" in how:
            await asyncio.sleep(how["sleep"])
        if how.get("hang"):
            freeze()
        if "crash" in how:
            crash(how["crash"])
        if "error" in how:
            raise RequestError(
                how["error"]["code"], how["error"]["message"], how["error"].get("data")
            )

    def modes(self, script: dict[str, Any], current: str | None) -> dict[str, Any] | None:
        modes = script.get("modes")
        if not modes:
            return None
        return {"currentModeId": current or modes["current"], "availableModes": modes["available"]}

    async def send_commands(self, session_id: str, commands: list[dict[str, Any]]) -> None:
        await self.update(session_id, commands_update(commands))

    def session(self, session_id: str) -> Session:
        if session_id not in self.sessions:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "reason": "unknown session"}
            )
        return self.sessions[session_id]

    # The protocol.

    async def initialize(self, protocol_version: int, **_: Any) -> dict[str, Any]:
        script = self.script()
        await self.misbehave(script.get("init"))
        capabilities = script.get(
            "prompt_capabilities", {"image": False, "embedded_context": False}
        )
        answer: dict[str, Any] = {
            "protocolVersion": script.get("protocol_version", 1),
            "agentCapabilities": {
                "loadSession": bool(script.get("load_session", True)),
                "promptCapabilities": camelized(capabilities),
            },
            "authMethods": script.get("auth_methods", []),
        }
        info = script.get("agent_info", {"name": "scripted", "version": "1.0"})
        if info:
            answer["agentInfo"] = info
        return answer

    async def new_session(self, cwd: str, **_: Any) -> dict[str, Any]:
        script = self.script()
        await self.misbehave(script.get("new_session"))
        modes = self.modes(script, None)
        session = Session(f"sess-{uuid.uuid4().hex[:12]}", cwd, modes and modes["currentModeId"])
        session.save()
        self.sessions[session.id] = session
        if script.get("commands"):
            self.after_this_answer(self.send_commands(session.id, script["commands"]))
        answer: dict[str, Any] = {"sessionId": session.id}
        if modes:
            answer["modes"] = modes
        return answer

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> dict[str, Any]:
        script = self.script()
        if not script.get("load_session", True):
            raise RequestError.method_not_found("session/load")
        await self.misbehave(script.get("load"))
        path = Session.path(session_id)
        if not path.exists():
            raise RequestError(-32002, "Session not found", {"sessionId": session_id})
        saved = json.loads(path.read_text())
        session = Session(session_id, cwd, saved.get("mode"))
        session.history = saved["history"]
        self.sessions[session_id] = session
        for said in session.history:
            kind = "user_message_chunk" if said["role"] == "user" else "agent_message_chunk"
            await self.update(session_id, text_chunk(kind, said["text"]))
        if script.get("commands"):
            self.after_this_answer(self.send_commands(session_id, script["commands"]))
        modes = self.modes(script, session.mode)
        return {"modes": modes} if modes else {}

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> dict[str, Any]:
        session = self.session(session_id)
        modes = self.script().get("modes")
        if modes and mode_id not in {mode["id"] for mode in modes["available"]}:
            raise RequestError.invalid_params({"modeId": mode_id, "reason": "no such mode"})
        session.mode = mode_id
        session.save()
        await self.update(
            session_id, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}
        )
        return {}

    async def cancel(self, session_id: str, **_: Any) -> None:
        if session_id in self.sessions:
            self.sessions[session_id].cancelled.set()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> dict[str, Any]:
        session = self.session(session_id)
        session.cancelled = asyncio.Event()
        text = "\n".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        script = self.script()
        steps: list[dict[str, Any]] = [{"say": "no script for this prompt"}]
        for turn in script.get("turns", []):
            if turn.get("match", "") in text:
                steps = turn.get("steps", [])
                break
        run = Turn(self, session)
        try:
            return await run.steps(steps)
        finally:
            session.history.append({"role": "user", "text": text})
            if run.said:
                session.history.append({"role": "agent", "text": "".join(run.said)})
            session.save()


def text_chunk(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def commands_update(commands: list[dict[str, Any]]) -> dict[str, Any]:
    available = []
    for command in commands:
        entry = {"name": command["name"], "description": command.get("description", "")}
        if "hint" in command:
            entry["input"] = {"hint": command["hint"]}
        elif "input" in command:
            entry["input"] = command["input"]
        available.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": available}


def tool_fields(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool call's fields as the script gives them (`id`, `raw_input`, ...) in wire form."""
    fields = {key: value for key, value in spec.items() if key not in ("options", "on_reject")}
    if "id" in fields:
        fields["toolCallId"] = fields.pop("id")
    return camelized(fields)


class Turn:
    """One prompt's steps, run in order; a cancel ends the turn `cancelled` before the next.

    say {text, chunks: N, message_id}     agent_message_chunk(s), the text cut in N
    think, user_echo                      agent_thought_chunk, user_message_chunk
    tool {id, title, kind, status, raw_input, content, locations, ...}   tool_call
    tool_update {id, and only the fields to change}                      tool_call_update
    permission {id, title, kind, raw_input, content, locations, options: [{id, name, kind}],
        on_reject: "stop"}   session/request_permission; a cancelled outcome ends the turn
        `cancelled`; a reject_* option with on_reject "stop" says "rejected" and ends it
    read {path, line, limit}, write {path, content}   fs/*; a relative path is the cwd's
    terminal {command, args, cwd, env, output_byte_limit, tool_id, wait, output, kill,
        release}   terminal/create, then wait_for_exit (wait, default true), output
        (default true), kill (default false), release (default true); `tool_id` sends a
        tool_call_update embedding the terminal once created
    plan [entries]; mode id; commands [...]; title text; usage_update {used, size, cost}
    unknown_update {...}                  a session/update with this `update`, unvalidated
    sleep seconds (a cancel ends it); wait_cancel: until cancelled, then end `cancelled`
    stderr text, repeat N; raw line; raw_bytes N (a valid agent_message_chunk line of N bytes)
    call {method, params}                 a request the client may not know
    crash code; hang true (the whole process) or "turn" (this turn never answers)
    stop reason, usage {...}              the answer (any reason, valid or not)
    error {code, message, data}           the prompt answers a JSON-RPC error
    """

    def __init__(self, agent: ScriptedAgent, session: Session) -> None:
        self.agent = agent
        self.session = session
        self.said: list[str] = []

    async def steps(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        for step in steps:
            if self.session.cancelled.is_set():
                break
            kind = next((key for key in step if hasattr(self, f"do_{key}")), None)
            if kind is None:
                write_stderr(f"scripted agent: unknown step {json.dumps(step)}")
                raise RequestError.internal_error({"details": f"unknown step {step}"})
            answer = await getattr(self, f"do_{kind}")(step[kind], step)
            if answer is not None:
                return answer
        if self.session.cancelled.is_set():
            return {"stopReason": "cancelled"}
        return {"stopReason": "end_turn"}

    async def update(self, update: dict[str, Any]) -> None:
        await self.agent.update(self.session.id, update)

    def absolute(self, path: str) -> str:
        return str(Path(self.session.cwd, path)) if not os.path.isabs(path) else path

    async def say(self, text: str, chunks: int = 1, message_id: str | None = None) -> None:
        self.said.append(text)
        count = max(1, min(chunks, len(text)))
        size, extra = divmod(len(text), count)
        start = 0
        for index in range(count):
            end = start + size + (1 if index < extra else 0)
            await self.update(text_chunk("agent_message_chunk", text[start:end], message_id))
            start = end

    async def do_say(self, text: str, step: dict[str, Any]) -> None:
        await self.say(text, step.get("chunks", 1), step.get("message_id"))

    async def do_think(self, text: str, step: dict[str, Any]) -> None:
        await self.update(text_chunk("agent_thought_chunk", text, step.get("message_id")))

    async def do_user_echo(self, text: str, step: dict[str, Any]) -> None:
        await self.update(text_chunk("user_message_chunk", text, step.get("message_id")))

    async def do_tool(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        fields = {"title": spec.get("id", "tool"), **tool_fields(spec)}
        await self.update({"sessionUpdate": "tool_call", **fields})

    async def do_tool_update(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        await self.update({"sessionUpdate": "tool_call_update", **tool_fields(spec)})

    async def do_permission(self, spec: dict[str, Any], _: dict[str, Any]) -> dict[str, Any] | None:
        options = [
            {"optionId": o.get("id", o.get("optionId")), "name": o["name"], "kind": o["kind"]}
            for o in spec.get("options", [])
        ] or DEFAULT_OPTIONS
        params = {"sessionId": self.session.id, "toolCall": tool_fields(spec), "options": options}
        ok, answer = await self.agent.request("session/request_permission", params)
        if not ok:
            return None
        outcome = answer.get("outcome", {})
        if outcome.get("outcome") == "cancelled":
            return {"stopReason": "cancelled"}
        kinds = {option["optionId"]: option["kind"] for option in options}
        rejected = kinds.get(outcome.get("optionId"), "").startswith("reject")
        if rejected and spec.get("on_reject") == "stop":
            await self.say("rejected")
            return {"stopReason": "end_turn"}
        return None

    async def do_read(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        params = {"sessionId": self.session.id, "path": self.absolute(spec["path"])}
        params |= {key: spec[key] for key in ("line", "limit") if spec.get(key) is not None}
        await self.agent.request("fs/read_text_file", params)

    async def do_write(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        params = {
            "sessionId": self.session.id,
            "path": self.absolute(spec["path"]),
            "content": spec["content"],
        }
        await self.agent.request("fs/write_text_file", params)

    async def do_terminal(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        params: dict[str, Any] = {"sessionId": self.session.id, "command": spec["command"]}
        for key in ("args", "cwd", "env", "output_byte_limit"):
            if spec.get(key) is not None:
                params[camel(key)] = spec[key]
        ok, created = await self.agent.request("terminal/create", params)
        if not ok:
            return
        ids = {"sessionId": self.session.id, "terminalId": created["terminalId"]}
        if spec.get("tool_id"):
            content = [{"type": "terminal", "terminalId": created["terminalId"]}]
            await self.update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": spec["tool_id"],
                    "content": content,
                }
            )
        if spec.get("wait", True):
            await self.agent.request("terminal/wait_for_exit", ids)
        if spec.get("output", True):
            await self.agent.request("terminal/output", ids)
        if spec.get("kill", False):
            await self.agent.request("terminal/kill", ids)
        if spec.get("release", True):
            await self.agent.request("terminal/release", ids)

    async def do_plan(self, entries: list[dict[str, Any]], _: dict[str, Any]) -> None:
        entries = [{"status": "pending", "priority": "medium", **entry} for entry in entries]
        await self.update({"sessionUpdate": "plan", "entries": entries})

    async def do_mode(self, mode: str, _: dict[str, Any]) -> None:
        self.session.mode = mode
        await self.update({"sessionUpdate": "current_mode_update", "currentModeId": mode})

    async def do_commands(self, commands: list[dict[str, Any]], _: dict[str, Any]) -> None:
        await self.update(commands_update(commands))

    async def do_title(self, title: str, _: dict[str, Any]) -> None:
        await self.update({"sessionUpdate": "session_info_update", "title": title})

    async def do_usage_update(self, usage: dict[str, Any], _: dict[str, Any]) -> None:
        await self.update({"sessionUpdate": "usage_update", **usage})

    async def do_unknown_update(self, update: dict[str, Any], _: dict[str, Any]) -> None:
        await self.update(update)

    async def do_sleep(self, seconds: float, _: dict[str, Any]) -> dict[str, Any] | None:
        try:
            await asyncio.wait_for(self.session.cancelled.wait(), timeout=seconds)
        except TimeoutError:
            return None
        return {"stopReason": "cancelled"}

    async def do_wait_cancel(self, _: Any, __: dict[str, Any]) -> dict[str, Any]:
        await self.session.cancelled.wait()
        return {"stopReason": "cancelled"}

    async def do_stderr(self, text: str, step: dict[str, Any]) -> None:
        for _ in range(step.get("repeat", 1)):
            write_stderr(text)

    async def do_raw(self, line: str, _: dict[str, Any]) -> None:
        await self.agent.write_raw(line.encode() + b"\n")

    async def do_raw_bytes(self, size: int, _: dict[str, Any]) -> None:
        def line(text: str) -> str:
            params = {
                "sessionId": self.session.id,
                "update": text_chunk("agent_message_chunk", text),
            }
            message = {"jsonrpc": "2.0", "method": "session/update", "params": params}
            return json.dumps(message, separators=(",", ":"))

        padding = "x" * max(0, size - len(line("")))
        await self.agent.write_raw(line(padding).encode() + b"\n")

    async def do_call(self, spec: dict[str, Any], _: dict[str, Any]) -> None:
        await self.agent.request(spec["method"], spec.get("params", {}))

    async def do_crash(self, code: int, _: dict[str, Any]) -> None:
        crash(code)

    async def do_hang(self, how: Any, _: dict[str, Any]) -> None:
        if how == "turn":
            await asyncio.Event().wait()
        freeze()

    async def do_stop(self, reason: str, step: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"stopReason": reason}
        if "usage" in step:
            answer["usage"] = camelized(step["usage"])
        return answer

    async def do_error(self, error: dict[str, Any], _: dict[str, Any]) -> None:
        raise RequestError(error["code"], error["message"], error.get("data"))


async def main(script_path: Path) -> None:
    agent = ScriptedAgent(script_path)
    # As acp.run_agent does, but keeping the StreamWriter for the raw lines.
    reader, writer = await stdio_streams(limit=50 * 1024 * 1024)
    agent.writer = writer
    conn = AgentSideConnection(agent, writer, reader, listening=False, observers=[agent.observe])
    try:
        await conn.listen()
    finally:
        await asyncio.shield(conn.close())


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
