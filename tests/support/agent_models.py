"""Test support: scripted model servers on 127.0.0.1 for real ACP agents (Claude Code,
Codex), which talk to their model over HTTP and have no idea it is a test.

`AnthropicModel` speaks the Anthropic Messages API as Claude Code calls it (streaming SSE
with text, thinking and tool_use blocks; POST /v1/messages/count_tokens); `ResponsesModel`
speaks the streaming OpenAI Responses API as Codex calls it (message and function_call
output items). Each runs its own event loop in a thread, so a sync test and an async one
use it the same way:

    with AnthropicModel() as model:
        model.script(
            Turn(calls=[Call("Read", {"file_path": str(path)})]),
            Turn(calls=[Call("mcp__acp__Bash", {"command": "ls", "timeout": 30000})]),
            Turn(text="All done."),
        )
        ... point the agent at model.url, run a prompt ...
        assert model.tool_results()  # what the agent sent back

The script is consumed one `Turn` per *conversation* call, in order. A script item may be
a function of the request's JSON body returning a `Turn`, to answer from what was sent.
Calls that are not the conversation (count_tokens, Claude Code's title/topic and other
side queries: a /v1/messages request without tools, or a Codex request that is not the
session's own) are answered with `side_reply` without consuming the script. When the
script runs out the model answers `Turn(text=EXHAUSTED)` and counts it in `exhausted`.

Every request is kept in `requests` (method, path, headers, JSON body, and whether it was a
conversation call), so a test can assert what the model saw: `tool_results()` lists the
tool results the agent sent back in the last conversation request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import json
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EXHAUSTED = "(the scripted model has nothing more to say)"


@dataclass
class Call:
    """A tool call the model makes: the tool's name and its arguments. For the Responses API
    a str `args` makes a freeform custom tool call (Codex's `apply_patch` tool with a known
    model): the str is its `input`."""

    name: str
    args: dict[str, Any] | str
    id: str = ""


@dataclass
class Turn:
    """One model reply: optional thinking, then text, then tool calls (any may be empty)."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    thinking: str = ""
    # Usage reported for the reply.
    input_tokens: int = 100
    output_tokens: int = 20
    # Raw stream override: (event name, data) pairs sent instead of the rendered Turn.
    raw_events: list[tuple[str, Any]] | None = None
    # An HTTP error instead of a reply: (status, JSON body).
    error: tuple[int, Any] | None = None
    # Seconds to wait before answering (to cancel a turn while the model "thinks").
    delay: float = 0.0


Script = Turn | Callable[[Any], Turn]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    # True when it consumed a scripted Turn (the agent's own conversation).
    conversation: bool = False


@dataclass
class _Response:
    status: int = 200
    body: Any = None
    events: list[tuple[str, Any]] | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class _ModelServer:
    """A minimal HTTP/1.1 server (keep-alive, chunked SSE replies) in a thread of its own."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._script: list[Script] = []
        self.exhausted = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    # The test's side

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *turns: Script) -> None:
        with self._lock:
            self._script.extend(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def conversation(self) -> list[Request]:
        return [r for r in list(self.requests) if r.conversation]

    @property
    def side_calls(self) -> list[Request]:
        return [r for r in list(self.requests) if not r.conversation]

    def start(self) -> _ModelServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop

            async def serve() -> None:
                self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
                self.port = self._server.sockets[0].getsockname()[1]
                ready.set()

            loop.run_until_complete(serve())
            loop.run_forever()
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()

            async def settle() -> None:
                await asyncio.gather(*self._tasks, return_exceptions=True)

            loop.run_until_complete(settle())
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=run, name=type(self).__name__, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the model server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Any:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    def _take(self, body: Any) -> Turn:
        with self._lock:
            item = self._script.pop(0) if self._script else None
        if item is None:
            self.exhausted += 1
            return Turn(text=EXHAUSTED)
        return item(body) if callable(item) else item

    # Subclasses: classify and answer

    def _answer(self, request: Request) -> _Response:
        raise NotImplementedError

    # HTTP

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        line = await reader.readline()
        if not line:
            return False
        method, path, _ = line.decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int((await reader.readline()).split(b";")[0].strip(), 16)
                if size == 0:
                    await reader.readline()
                    break
                raw += await reader.readexactly(size)
                await reader.readline()
        else:
            size = int(headers.get("content-length", "0"))
            raw = await reader.readexactly(size) if size else b""
        encoding = headers.get("content-encoding", "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        elif encoding == "zstd":  # Python 3.14's compression.zstd, when there
            with contextlib.suppress(ImportError):
                from compression import zstd  # type: ignore[import-not-found]

                raw = zstd.decompress(raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = Request(method, path.split("?")[0], headers, body)
        self.requests.append(request)
        response = self._answer(request)
        if response.delay:
            await asyncio.sleep(response.delay)
        if response.events is None:
            data = json.dumps(response.body if response.body is not None else {}).encode()
            head = [
                f"HTTP/1.1 {response.status} X",
                "content-type: application/json",
                f"content-length: {len(data)}",
                *(f"{k}: {v}" for k, v in response.headers.items()),
            ]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
            return True
        head = [
            f"HTTP/1.1 {response.status} OK",
            "content-type: text/event-stream",
            "cache-control: no-cache",
            "transfer-encoding: chunked",
            *(f"{k}: {v}" for k, v in response.headers.items()),
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        for event, data in response.events:
            payload = data if isinstance(data, str) else json.dumps(data)
            chunk = ((f"event: {event}\n" if event else "") + f"data: {payload}\n\n").encode()
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


# Anthropic Messages (Claude Code)


class AnthropicModel(_ModelServer):
    """The Anthropic Messages API as Claude Code (the Claude Agent SDK) calls it.

    A POST /v1/messages with tools is the conversation; one without tools is a side query
    (Claude Code's title / topic / summary prompts), answered with `side_text`. POST
    /v1/messages/count_tokens answers a token count; anything else is a 404.
    """

    model_name = "claude-sonnet-4-5"

    def __init__(self, side_text: str = "Test session") -> None:
        super().__init__()
        self.side_text = side_text

    def is_conversation(self, body: Any) -> bool:
        return isinstance(body, dict) and bool(body.get("tools"))

    def _answer(self, request: Request) -> _Response:
        body = request.json if isinstance(request.json, dict) else {}
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            size = len(json.dumps(body))
            return _Response(body={"input_tokens": max(1, size // 4)})
        if request.method != "POST" or request.path != "/v1/messages":
            return _Response(
                status=404,
                body={"type": "error", "error": {"type": "not_found_error", "message": "no"}},
            )
        if self.is_conversation(body):
            request.conversation = True
            turn = self._take(body)
        else:
            turn = Turn(text=self.side_text)
        model = body.get("model") or self.model_name
        if turn.error is not None:
            return _Response(status=turn.error[0], body=turn.error[1], delay=turn.delay)
        if turn.raw_events is not None:
            return _Response(events=turn.raw_events, delay=turn.delay)
        if not body.get("stream"):
            return _Response(body=self._message(turn, model), delay=turn.delay)
        return _Response(events=self._stream(turn, model), delay=turn.delay)

    def _blocks(self, turn: Turn) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if turn.thinking:
            blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": "c2ln"})
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for call in turn.calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id or self._next_id("toolu"),
                    "name": call.name,
                    "input": call.args,
                }
            )
        return blocks

    def _message(self, turn: Turn, model: str) -> dict[str, Any]:
        return {
            "id": self._next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": self._blocks(turn),
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens},
        }

    def _stream(self, turn: Turn, model: str) -> list[tuple[str, Any]]:
        message = self._message(turn, model)
        blocks = message.pop("content")
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {
                "input_tokens": turn.input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        events: list[tuple[str, Any]] = [
            ("message_start", {"type": "message_start", "message": start})
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "thinking":
                first = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": block["thinking"]},
                    {"type": "signature_delta", "signature": block["signature"]},
                ]
            elif block["type"] == "text":
                first = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
            else:
                first = {**block, "input": {}}
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in _pieces(json.dumps(block["input"]))
                ]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": first},
                )
            )
            for delta in deltas:
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": turn.output_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def tool_results(self, request: Request | None = None) -> list[dict[str, Any]]:
        """The tool_result blocks in a conversation request (default: the last one) that
        answer tool calls of the model's previous reply."""
        conversation = self.conversation
        request = request or (conversation[-1] if conversation else None)
        if request is None:
            return []
        messages = request.json.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return []
        content = messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# OpenAI Responses (Codex)


class ResponsesModel(_ModelServer):
    """The streaming OpenAI Responses API as Codex calls it: POST {base}/responses.

    Every POST /responses that carries tools is the conversation (Codex sends its tools on
    each turn request); one without tools (a title or summary prompt) is a side call.
    GET /models answers an empty list, anything else a 404.
    """

    model_name = "gpt-5.1-codex"

    def __init__(self, side_text: str = "Test session") -> None:
        super().__init__()
        self.side_text = side_text

    def is_conversation(self, body: Any) -> bool:
        return isinstance(body, dict) and bool(body.get("tools"))

    def _answer(self, request: Request) -> _Response:
        body = request.json if isinstance(request.json, dict) else {}
        path = request.path.rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return _Response(body={"object": "list", "data": [], "models": []})
        if request.method != "POST" or not path.endswith("/responses"):
            return _Response(status=404, body={"error": {"message": "not found", "type": "nf"}})
        if self.is_conversation(body):
            request.conversation = True
            turn = self._take(body)
        else:
            turn = Turn(text=self.side_text)
        if turn.error is not None:
            return _Response(status=turn.error[0], body=turn.error[1], delay=turn.delay)
        if turn.raw_events is not None:
            return _Response(events=turn.raw_events, delay=turn.delay)
        return _Response(
            events=self._stream(turn, body.get("model") or self.model_name), delay=turn.delay
        )

    def _stream(self, turn: Turn, model: str) -> list[tuple[str, Any]]:
        rid = self._next_id("resp")
        seq = itertools.count()
        events: list[tuple[str, Any]] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

        base = {"id": rid, "object": "response", "created_at": 1700000000, "model": model}
        emit("response.created", response={**base, "status": "in_progress", "output": []})
        emit("response.in_progress", response={**base, "status": "in_progress", "output": []})
        output: list[dict[str, Any]] = []
        if turn.thinking:
            item = {
                "id": self._next_id("rs"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": turn.thinking}],
            }
            index = len(output)
            emit("response.output_item.added", output_index=index, item={**item, "summary": []})
            emit(
                "response.reasoning_summary_text.delta",
                item_id=item["id"], output_index=index, summary_index=0, delta=turn.thinking,
            )  # fmt: skip
            emit("response.output_item.done", output_index=index, item=item)
            output.append(item)
        if turn.text:
            mid = self._next_id("msg")
            index = len(output)
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.output_item.added",
                output_index=index,
                item={
                    "id": mid,
                    "type": "message",
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
            )
            emit(
                "response.content_part.added",
                item_id=mid,
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in _pieces(turn.text):
                emit(
                    "response.output_text.delta",
                    item_id=mid, output_index=index, content_index=0, delta=piece,
                )  # fmt: skip
            emit(
                "response.output_text.done",
                item_id=mid, output_index=index, content_index=0, text=turn.text,
            )  # fmt: skip
            done_part = {**part, "text": turn.text}
            emit(
                "response.content_part.done",
                item_id=mid,
                output_index=index,
                content_index=0,
                part=done_part,
            )
            item = {
                "id": mid, "type": "message", "status": "completed", "role": "assistant",
                "content": [done_part],
            }  # fmt: skip
            emit("response.output_item.done", output_index=index, item=item)
            output.append(item)
        for call in turn.calls:
            index = len(output)
            if isinstance(call.args, str):
                item = {
                    "id": self._next_id("ctc"), "type": "custom_tool_call", "status": "completed",
                    "call_id": call.id or self._next_id("call"), "name": call.name,
                    "input": call.args,
                }  # fmt: skip
                emit("response.output_item.added", output_index=index, item={**item, "input": ""})
                emit("response.output_item.done", output_index=index, item=item)
                output.append(item)
                continue
            fid = self._next_id("fc")
            arguments = json.dumps(call.args)
            item = {
                "id": fid, "type": "function_call", "status": "in_progress",
                "call_id": call.id or self._next_id("call"), "name": call.name, "arguments": "",
            }  # fmt: skip
            emit("response.output_item.added", output_index=index, item=item)
            for piece in _pieces(arguments):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=fid,
                    output_index=index,
                    delta=piece,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=fid,
                output_index=index,
                arguments=arguments,
            )
            item = {**item, "status": "completed", "arguments": arguments}
            emit("response.output_item.done", output_index=index, item=item)
            output.append(item)
        usage = {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        }
        emit(
            "response.completed",
            response={**base, "status": "completed", "output": output, "usage": usage},
        )
        return events

    def tool_results(self, request: Request | None = None) -> list[dict[str, Any]]:
        """The function_call_output items in a conversation request (default: the last)."""
        conversation = self.conversation
        request = request or (conversation[-1] if conversation else None)
        if request is None:
            return []
        items = request.json.get("input") or []
        kinds = ("function_call_output", "custom_tool_call_output")
        return [i for i in items if isinstance(i, dict) and i.get("type") in kinds]
