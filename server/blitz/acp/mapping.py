"""Tables U and S of docs/agents.md as code: what an ACP agent says becomes events.

`TurnMapper` turns one prompt's `session/update`s into the contract's events (U2-U13),
keeping what a stream needs between updates: the message being written, each tool call's
last values and what of its output was sent. `finish_error` reads a stop reason (table
S). Updates arrive here as the JSON the agent sent (the SDK's models dumped by alias), so
each row reads as the wire does. The permission side, tables K and D, is approvals.py's;
it shows paths and diffs as `relative` and `diff_of` here do. Nothing here performs I/O:
the runner emits what these return.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import duration_pb2, struct_pb2

from blitz.errors import BlitzError, Reason
from blitz.size_limits import DIFF_MAX, clip
from blitz.v1 import turn_pb2 as t

__all__ = ["TurnMapper", "diff_of", "finish_error", "relative"]

# A tool call's result keeps at most this much of its text output.
_OUTPUT_MAX = 16 * 1024


def _struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(json.loads(json.dumps(value, default=str)))
    return struct


def relative(path: str, workspace: Path) -> str:
    """A path as clients see it: relative to the workspace where it lies in it."""
    try:
        rel = Path(path).relative_to(workspace).as_posix()
    except ValueError:
        return path
    return rel or "."


@dataclass
class _Call:
    """One tool call as the agent last described it."""

    id: str
    title: str = ""
    kind: str = ""
    status: str = "pending"
    raw_input: Any = None
    raw_output: Any = None
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    final_sent: bool = False
    ended: bool = False
    started: float = 0.0
    # How much of its text content was streamed as tool_output.
    streamed: str = ""

    def take(self, update: Mapping[str, Any]) -> None:
        """The fields an update gives, each replacing the last value (U6)."""
        for key, attr in (
            ("title", "title"),
            ("kind", "kind"),
            ("status", "status"),
            ("rawInput", "raw_input"),
            ("rawOutput", "raw_output"),
            ("content", "content"),
            ("locations", "locations"),
        ):
            if key in update and update[key] is not None:
                setattr(self, attr, update[key])

    @property
    def name(self) -> str:
        return self.kind or "other"

    def text(self) -> str:
        parts = []
        for item in self.content:
            if item.get("type") == "content":
                parts.append(_block_text(item.get("content") or {}))
        return "".join(p for p in parts if p)

    def diffs(self, workspace: Path) -> str:
        return "".join(
            diff_of(item, workspace) for item in self.content if item.get("type") == "diff"
        )


def diff_of(item: Mapping[str, Any], workspace: Path) -> str:
    """A `diff` content item (U6) as a unified diff, its path relative."""
    # Imported here: diffs.py is the built-in agent's, shared for the same format.
    from blitz.agent.diffs import unified_diff

    rel = relative(str(item.get("path", "")), workspace)
    return unified_diff(item.get("oldText"), item.get("newText"), rel)


def _block_text(block: Mapping[str, Any]) -> str:
    """The text of a content block (U2): text, a link, an embedded text resource."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "resource_link":
        return f"[{block.get('name', '')}]({block.get('uri', '')})"
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return f"\n```\n{resource['text']}\n```\n"
    return ""


class TurnMapper:
    """One prompt's updates → events. `events_of` maps one update; `close` ends the turn's
    message and its open tool calls."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._message: list[str] = []
        self._message_id: str | None = None
        self._thought: list[str] = []
        self._calls: dict[str, _Call] = {}
        self.output = ""
        self.dropped_media = False
        # The last plan's entries (U7), for plan mode and an approval's task.
        self.tasks: list[t.Task] = []
        # U9-U13, for the runner: the last mode id, title, commands, usage.
        self.mode_id: str | None = None
        self.title: str | None = None
        self.commands: list[dict[str, Any]] | None = None
        self.cost_usd: float | None = None
        self.cost_unpriced = False
        self.context_used: int | None = None

    # Messages (U2, U3)

    def _end_message(self) -> list[t.TurnEvent]:
        events = []
        if self._thought:
            whole = "".join(self._thought)
            self._thought = []
            events.append(t.TurnEvent(text=t.Text(text=whole, repeat=True, thought=True)))
        if self._message:
            whole = "".join(self._message)
            self._message = []
            self.output = whole
            events.append(t.TurnEvent(text=t.Text(text=whole, repeat=True)))
        return events

    def _chunk(self, update: Mapping[str, Any], *, thought: bool) -> list[t.TurnEvent]:
        block = update.get("content") or {}
        events: list[t.TurnEvent] = []
        message_id = update.get("messageId")
        if not thought and message_id is not None and message_id != self._message_id:
            if self._message_id is not None:
                events += self._end_message()
            self._message_id = message_id
        text = _block_text(block)
        if not text:
            if block.get("type") in ("image", "audio", "resource") and not self.dropped_media:
                self.dropped_media = True
                events.append(_notice("the agent sent an image or a file; Blitz shows text only"))
            return events
        (self._thought if thought else self._message).append(text)
        events.append(t.TurnEvent(text=t.Text(text=text, partial=True, thought=thought)))
        return events

    # Tool calls (U5, U6)

    def call(self, call_id: str) -> _Call | None:
        return self._calls.get(call_id)

    def _tool_call(self, call: _Call, *, final: bool) -> t.TurnEvent:
        args: dict[str, Any] = {"title": call.title, "kind": call.name}
        if call.raw_input is not None:
            args["input"] = call.raw_input
        paths = [relative(str(loc.get("path", "")), self._workspace) for loc in call.locations]
        if paths:
            args["locations"] = paths
        return t.TurnEvent(
            tool_call=t.ToolCall(id=call.id, name=call.name, args=_struct(args), partial=not final)
        )

    def final_call(
        self, call_id: str, update: Mapping[str, Any] | None = None
    ) -> list[t.TurnEvent]:
        """The call's final `tool_call`, once (at its permission request, or as it runs)."""
        call = self._calls.get(call_id)
        events = self._end_message()
        if call is None:
            call = self._calls[call_id] = _Call(id=call_id)
        if update:
            call.take(update)
        if not call.final_sent:
            call.final_sent = True
            call.started = time.monotonic()
            events.append(self._tool_call(call, final=True))
        return events

    def _call_update(self, update: Mapping[str, Any], *, new: bool) -> list[t.TurnEvent]:
        call_id = str(update.get("toolCallId", ""))
        events = self._end_message()
        call = self._calls.get(call_id)
        if call is None:
            call = self._calls[call_id] = _Call(id=call_id)
        elif new:
            call.content = []
        call.take(update)
        if not call.final_sent:
            if call.status == "pending":
                events.append(self._tool_call(call, final=False))
                return events
            events += self.final_call(call_id)
        if not call.ended:
            events += self._output(call)
        if call.status in ("completed", "failed") and not call.ended:
            events.append(self._result(call, status=call.status, error=call.status == "failed"))
        return events

    def _output(self, call: _Call) -> list[t.TurnEvent]:
        text = call.text()
        if not text or text == call.streamed:
            return []
        new = text[len(call.streamed) :] if text.startswith(call.streamed) else text
        call.streamed = text
        return [t.TurnEvent(tool_output=t.ToolOutput(id=call.id, name=call.name, output=new))]

    def terminal_output(self, terminal_call: str | None, text: str) -> list[t.TurnEvent]:
        """A terminal's new output (T2), as `tool_output` of the call that shows it."""
        if not text:
            return []
        call = self._calls.get(terminal_call or "")
        name = call.name if call else "execute"
        return [
            t.TurnEvent(tool_output=t.ToolOutput(id=terminal_call or "", name=name, output=text))
        ]

    def terminal_call(self, terminal_id: str) -> str | None:
        """The tool call whose content names the terminal, else the running execute call."""
        running = None
        for call in self._calls.values():
            if any(i.get("terminalId") == terminal_id for i in call.content):
                return call.id
            if call.kind == "execute" and not call.ended:
                running = call.id
        return running

    def edit_call(self) -> str:
        """The file-changing tool call still running, for a write's `file_changed`."""
        for call in reversed(list(self._calls.values())):
            if call.kind in ("edit", "delete", "move") and not call.ended:
                return call.id
        return ""

    def _result(self, call: _Call, *, status: str, error: bool) -> t.TurnEvent:
        call.ended = True
        result: dict[str, Any] = {"status": status, "title": call.title}
        text = call.text()
        if text:
            result["output"] = clip(text, _OUTPUT_MAX, what="output")
        diffs = call.diffs(self._workspace)
        if diffs:
            result["diffs"] = clip(diffs, DIFF_MAX, what="diff")
        if call.raw_output is not None:
            raw = json.dumps(call.raw_output, default=str)
            result["raw_output"] = clip(raw, _OUTPUT_MAX, what="raw_output")
        seconds = time.monotonic() - call.started if call.started else 0.0
        duration = duration_pb2.Duration()
        duration.FromNanoseconds(int(seconds * 1e9))
        return t.TurnEvent(
            tool_result=t.ToolResult(
                id=call.id,
                name=call.name,
                result=_struct(result),
                is_error=error,
                duration=duration,
            )
        )

    # Everything else (U4, U7, U9-U13)

    def events_of(self, update: Mapping[str, Any]) -> list[t.TurnEvent]:
        """The events one `session/update` becomes (its `update` object)."""
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            return self._chunk(update, thought=False)
        if kind == "agent_thought_chunk":
            return self._chunk(update, thought=True)
        if kind == "tool_call":
            return self._call_update(update, new=True)
        if kind == "tool_call_update":
            return self._call_update(update, new=False)
        if kind == "plan":
            entries = update.get("entries") or []
            self.tasks = [
                t.Task(
                    content=str(e.get("content", "")), status=str(e.get("status", "")), id=str(n)
                )
                for n, e in enumerate(entries, start=1)
            ]
            return [*self._end_message(), t.TurnEvent(tasks=t.Tasks(items=self.tasks))]
        if kind == "current_mode_update":
            self.mode_id = str(update.get("currentModeId", ""))
        elif kind == "session_info_update":
            if update.get("title"):
                self.title = str(update["title"])
        elif kind == "available_commands_update":
            self.commands = list(update.get("availableCommands") or [])
        elif kind == "usage_update":
            self._usage(update)
        return []  # user_message_chunk (U4), config_option_update (U11): nothing shown

    def _usage(self, update: Mapping[str, Any]) -> None:
        if isinstance(update.get("used"), int):
            self.context_used = update["used"]
        cost = update.get("cost")
        if isinstance(cost, Mapping) and isinstance(cost.get("amount"), int | float):
            if str(cost.get("currency", "")).upper() == "USD":
                self.cost_usd = float(cost["amount"])
            else:
                self.cost_unpriced = True

    def current_task(self) -> str:
        return next((task.id for task in self.tasks if task.status == "in_progress"), "")

    def close(self, *, cancelled: bool) -> list[t.TurnEvent]:
        """The prompt ended: its message whole, and a result for every call still open."""
        events = self._end_message()
        status = "cancelled" if cancelled else "unfinished"
        for call in self._calls.values():
            if call.final_sent and not call.ended:
                events.append(self._result(call, status=status, error=True))
        return events


def _notice(text: str, *, error: bool = False) -> t.TurnEvent:
    return t.TurnEvent(notice=t.Notice(text=text, error=error))


# Table S


def finish_error(stop_reason: str, *, asked_cancel: BlitzError | None) -> BlitzError | None:
    """What a prompt's stop reason makes of the turn's end (None: it ended well)."""
    if stop_reason == "end_turn":
        return None
    if stop_reason == "max_tokens":
        return BlitzError(Reason.MAX_TOKENS, "the model's output limit cut the answer short")
    if stop_reason == "max_turn_requests":
        return BlitzError(Reason.MAX_TURNS, "the agent reached its own limit of model calls")
    if stop_reason == "refusal":
        return BlitzError(
            Reason.REFUSED,
            "the agent refused to go on; it does not keep this prompt in what it remembers",
        )
    if stop_reason == "cancelled":
        if asked_cancel is not None:
            return asked_cancel
        return BlitzError(Reason.CANCELLED, "the agent cancelled the turn", {"by": "agent"})
    return BlitzError(
        Reason.AGENT_PROTOCOL_ERROR, f"the agent ended the prompt with {stop_reason!r}"
    )
