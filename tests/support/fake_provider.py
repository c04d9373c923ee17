"""Test support: a scripted model provider on 127.0.0.1 speaking the real wire formats.

`FakeProvider` is a tiny HTTP/1.1 server (asyncio streams, no framework) that answers each
request with the next scripted `Reply`: an SSE stream (OpenAI chat-completions chunks or
Anthropic Messages events), an error status with the provider's JSON error body, or a
stream cut off mid-way (the connection closes inside a chunked body, as a dropped network
does). The real `openai` and `anthropic` SDKs talk to it end to end; every request is kept
in `requests` for assertions. The helpers below build the providers' real event shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

# The API key tests configure; no log line or error message may contain it.
KEY = "sk-test-secret-key-123"


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    # SSE events: (event name or "", data); data is JSON-dumped unless it is a str.
    events: list[tuple[str, Any]] = field(default_factory=list)
    # A plain JSON body instead of a stream (errors).
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # Close the connection after this many events, without ending the stream.
    cut_after: int | None = None


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class FakeProvider:
    """`async with FakeProvider() as fake:` then `fake.script(...)` and point a client at it."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Request] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def __aenter__(self) -> FakeProvider:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
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
        size = int(headers.get("content-length", "0"))
        raw = await reader.readexactly(size) if size else b""
        self.requests.append(Request(method, path, headers, json.loads(raw) if raw else None))
        reply = (
            self.replies.pop(0) if self.replies else Reply(status=500, body={"error": "unscripted"})
        )
        if reply.body is not None or not reply.events:
            data = json.dumps(reply.body if reply.body is not None else {}).encode()
            head = [
                f"HTTP/1.1 {reply.status} X",
                "content-type: application/json",
                f"content-length: {len(data)}",
                *(f"{k}: {v}" for k, v in reply.headers.items()),
            ]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
            return True
        head = [
            f"HTTP/1.1 {reply.status} OK",
            "content-type: text/event-stream",
            "transfer-encoding: chunked",
            *(f"{k}: {v}" for k, v in reply.headers.items()),
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        for n, (event, data) in enumerate(reply.events):
            if reply.cut_after is not None and n >= reply.cut_after:
                await writer.drain()
                # Mid-body: no terminating chunk, the connection just goes.
                return False
            payload = data if isinstance(data, str) else json.dumps(data)
            text = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
            chunk = text.encode()
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


# OpenAI chat completions (streaming)


def _chunk(delta: dict[str, Any], *, model: str, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_usage(prompt: int, completion: int, cached: int = 0, *, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def openai_text(
    *pieces: str,
    model: str = "gpt-4o",
    usage: tuple[int, int, int] | None = (10, 5, 0),
    cut_after: int | None = None,
) -> Reply:
    """An answer streamed in `pieces`, then usage (None: none, as some servers do) and
    [DONE]."""
    events: list[tuple[str, Any]] = [
        ("", _chunk({"role": "assistant", "content": ""}, model=model))
    ]
    events += [("", _chunk({"content": p}, model=model)) for p in pieces]
    events.append(("", _chunk({}, model=model, finish="stop")))
    if usage is not None:
        events.append(("", openai_usage(usage[0], usage[1], usage[2], model=model)))
    events.append(("", "[DONE]"))
    return Reply(events=events, cut_after=cut_after)


def openai_tool_call(
    name: str,
    args: dict[str, Any],
    *,
    pieces: int = 3,
    call_id: str = "call_1",
    model: str = "gpt-4o",
    usage: tuple[int, int, int] = (10, 5, 0),
) -> Reply:
    """One tool call whose JSON arguments arrive in `pieces` parts."""
    text = json.dumps(args)
    size = -(-len(text) // pieces)
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    first = {
        "role": "assistant",
        "tool_calls": [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
        ],
    }
    events: list[tuple[str, Any]] = [("", _chunk(first, model=model))]
    for part in parts:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
        events.append(("", _chunk(delta, model=model)))
    events.append(("", _chunk({}, model=model, finish="tool_calls")))
    events.append(("", openai_usage(usage[0], usage[1], usage[2], model=model)))
    events.append(("", "[DONE]"))
    return Reply(events=events)


def openai_error(status: int, message: str, *, code: str = "", kind: str = "") -> Reply:
    error = {
        "message": message,
        "type": kind or "invalid_request_error",
        "param": None,
        "code": code or None,
    }
    return Reply(status=status, body={"error": error})


# Anthropic Messages (streaming)


def anthropic_stream(
    blocks: list[dict[str, Any]],
    *,
    model: str = "claude-sonnet-4-6",
    usage: dict[str, int] | None = None,
    output_tokens: int = 20,
    stop_reason: str = "end_turn",
) -> Reply:
    """A message made of `blocks`: {"thinking": [...pieces]}, {"text": [...]}, or
    {"tool_use": name, "id": ..., "json": [...pieces]}."""
    start_usage = {"input_tokens": 100, "output_tokens": 1, **(usage or {})}
    events: list[tuple[str, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": model,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        if "thinking" in block:
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in block["thinking"]]
            deltas.append({"type": "signature_delta", "signature": "c2lnbmF0dXJl"})
        elif "text" in block:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in block["text"]]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["tool_use"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in block["json"]]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
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
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply(events=events)


def anthropic_error(status: int, kind: str, message: str) -> Reply:
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})
