"""pydantic-ai stream events to Blitz `TurnEvent`s, emitted through `TurnIO.emit`.

Text and thinking stream as partial chunks, then one final event with the whole part and
`repeat` set. Tool calls stream as partial events with whatever arguments parse so far; the
final `tool_call` comes right before the tool runs, and `tool_result` after, with how long
the tool ran (from that final call) and whether it failed (`is_error`). This is the
per-delta hot path of every turn (benchmarked at 20,000 chunks a turn): the text-delta
branch comes first and does little but build and emit one small message. Nothing here may
block or await.

When a model call is retried after its stream broke (`restart`), the client has already
seen part of the answer. The retried response's text is then checked against what was
shown: the part that repeats it is not sent again, and only what is new streams on. If the
retry says something different, a notice says so and the new text streams in full; the
final `repeat` event always carries the retried response's whole text.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pydantic_core
from google.protobuf import struct_pb2
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
)

from blitz.ports.agent import TurnIO
from blitz.v1 import turn_pb2

__all__ = ["EventMapper", "is_error", "result_struct", "to_struct"]

_TurnEvent = turn_pb2.TurnEvent
_Text = turn_pb2.Text


def to_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    """A JSON-able copy of `value` as a protobuf Struct (non-JSON values become strings)."""
    struct = struct_pb2.Struct()
    struct.update(pydantic_core.to_jsonable_python(value, fallback=str))
    return struct


class EventMapper:
    """Maps one agent run's events; holds the little state partial tool calls need.

    `overrides` are the arguments an approval replaced (an edited command): the tool call is
    shown with them, since they are what runs. `resumed` are the call ids a resume answers:
    their call was already shown before the turn parked, so it is shown again only when its
    arguments changed.
    """

    def __init__(
        self,
        io: TurnIO,
        *,
        overrides: Mapping[str, dict[str, Any]] | None = None,
        resumed: frozenset[str] = frozenset(),
        display_names: Mapping[str, str] | None = None,
    ) -> None:
        self._emit = io.emit
        self._overrides = dict(overrides or {})
        self._resumed = resumed
        # Model-facing tool names shown otherwise (MCP tools: `server.tool`).
        self._names = dict(display_names or {})
        # Streaming tool calls by part index: [id, name, arguments so far].
        self._calls: dict[int, list[str]] = {}
        # Partial text shown during the current model call, by thought flag, so that a
        # retried call does not show it twice (see `restart`).
        self._shown: dict[bool, list[str]] = {False: [], True: []}
        # After a restart: what the client saw and the retry has not yet repeated.
        self._replay: dict[bool, str] | None = None
        # When each running tool call started (monotonic seconds), by call id.
        self._started: dict[str, float] = {}

    def model_event(self, event: object) -> None:
        """One event of a model response stream."""
        # Hot path first: a text delta.
        if type(event) is PartDeltaEvent:
            delta = event.delta
            if type(delta) is TextPartDelta:
                if delta.content_delta:
                    self._text(delta.content_delta, False)
            elif type(delta) is ThinkingPartDelta:
                if delta.content_delta:
                    self._text(delta.content_delta, True)
            elif isinstance(delta, ToolCallPartDelta):
                self._tool_call_delta(event.index, delta)
        elif isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                if part.content:
                    self._text(part.content, False)
            elif isinstance(part, ThinkingPart):
                if part.content:
                    self._text(part.content, True)
            elif isinstance(part, ToolCallPart):
                # An empty dict is a start to which string deltas append (Anthropic's
                # `input: {}`), not arguments.
                args = part.args if isinstance(part.args, str) else ""
                if isinstance(part.args, dict) and part.args:
                    args = part.args_as_json_str()
                self._calls[event.index] = [part.tool_call_id, part.tool_name, args]
                self._partial_call(event.index)
        elif isinstance(event, PartEndEvent):
            part = event.part
            if isinstance(part, TextPart):
                self._emit(_TurnEvent(text=_Text(text=part.content, repeat=True)))
            elif isinstance(part, ThinkingPart):
                self._emit(_TurnEvent(text=_Text(text=part.content, repeat=True, thought=True)))
            elif isinstance(part, ToolCallPart):
                self._calls.pop(event.index, None)

    def response_done(self) -> None:
        """The current model call finished: nothing of it will be retried."""
        self._shown[False].clear()
        self._shown[True].clear()
        self._replay = None

    def restart(self) -> None:
        """The current model call is being retried from the start (its stream broke)."""
        if self._replay is None:
            self._replay = {False: "", True: ""}
        for thought, chunks in self._shown.items():
            # What the client saw is what this attempt produced plus what it still owed of an
            # earlier attempt (an attempt that broke again may have repeated only part of it).
            self._replay[thought] = "".join(chunks) + self._replay[thought]
            chunks.clear()
        self._calls.clear()

    def _text(self, text: str, thought: bool) -> None:
        self._shown[thought].append(text)
        if self._replay is not None and self._replay[thought]:
            owed = self._replay[thought]
            if owed.startswith(text):
                self._replay[thought] = owed[len(text) :]
                return
            if text.startswith(owed):
                self._replay[thought] = ""
                text = text[len(owed) :]
            else:
                self._replay[thought] = ""
                self._emit(
                    _TurnEvent(
                        notice=turn_pb2.Notice(
                            text="the retried model call answered differently; its text "
                            "follows, and its final text replaces what was shown"
                        )
                    )
                )
            if not text:
                return
        self._emit(_TurnEvent(text=_Text(text=text, partial=True, thought=thought)))

    def tool_event(self, event: object) -> None:
        """One event of the tool-calling step."""
        if isinstance(event, FunctionToolCallEvent):
            call = event.part
            call_id = call.tool_call_id
            self._started[call_id] = time.monotonic()
            args = self._overrides.get(call_id)
            if call_id in self._resumed and args is None:
                return
            if args is None:
                args = call.args_as_dict()
            name = self._names.get(call.tool_name, call.tool_name)
            self._emit(
                _TurnEvent(tool_call=turn_pb2.ToolCall(id=call_id, name=name, args=to_struct(args)))
            )
        elif isinstance(event, FunctionToolResultEvent):
            part = event.part
            name = self._names.get(part.tool_name, part.tool_name)
            result = turn_pb2.ToolResult(
                id=part.tool_call_id, name=name, result=result_struct(part)
            )
            result.is_error = is_error(part)
            started = self._started.pop(part.tool_call_id, None)
            if started is not None:
                result.duration.FromNanoseconds(round((time.monotonic() - started) * 1e9))
            self._emit(_TurnEvent(tool_result=result))

    def _tool_call_delta(self, index: int, delta: ToolCallPartDelta) -> None:
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = [delta.tool_call_id or "", "", ""]
        if delta.tool_call_id:
            call[0] = delta.tool_call_id
        if delta.tool_name_delta:
            call[1] += delta.tool_name_delta
        if isinstance(delta.args_delta, str):
            call[2] += delta.args_delta
        elif isinstance(delta.args_delta, dict):
            call[2] = pydantic_core.to_json(delta.args_delta).decode()
        self._partial_call(index)

    def _partial_call(self, index: int) -> None:
        call_id, name, args = self._calls[index]
        name = self._names.get(name, name)
        tool_call = turn_pb2.ToolCall(id=call_id, name=name, partial=True)
        if args:
            try:
                parsed = pydantic_core.from_json(args, allow_partial=True)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                tool_call.args.CopyFrom(to_struct(parsed))
        self._emit(_TurnEvent(tool_call=tool_call))


def is_error(part: ToolReturnPart) -> bool:
    """Whether the tool failed: pydantic-ai says so (failed, denied), or the tool's own
    result does (an `error`, a command that exited non-zero or timed out)."""
    if part.outcome != "success":
        return True
    content = part.content
    if not isinstance(content, dict):
        return False
    if content.get("error") or content.get("denied") or content.get("timed_out"):
        return True
    exit_code = content.get("exit_code")
    return isinstance(exit_code, int) and exit_code != 0


def result_struct(part: ToolReturnPart) -> struct_pb2.Struct:
    """What a client sees of a tool's return: the tool's dict, or its outcome and message."""
    content = part.content
    if part.outcome == "denied":
        return to_struct({"denied": True, "reason": part.model_response_str()})
    if isinstance(content, dict):
        return to_struct(content)
    value: dict[str, Any] = {"value": part.model_response_str()}
    if part.outcome != "success":
        value["outcome"] = part.outcome
    return to_struct(value)
