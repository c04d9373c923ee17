"""The agent's task list: items with stable ids, and which one is being worked on.

The `todo` tool replaces the whole list each time; `TaskList.replace` gives each item an
id that stays with it across updates — the id the model passed back, else the id of the
unclaimed earlier item with the same text, else a new one — and ids are never reused
within a session. The *current task* is the first `in_progress` item; every approval
request and question names it (`task_id`), so a client can show what an action is for.

The list is rebuilt from the message history alone (the `todo` tool's results carry the
items with their ids), so a parked turn resumed in another process sees the same ids.
A sub-agent keeps its own list with ids prefixed by its name ("tester.1"), and falls back
to the task of its parent it was delegated under. Nothing here emits or persists anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from blitz.v1 import turn_pb2

__all__ = ["TODO_TOOL", "TaskList", "TodoItem"]

# The tool whose results hold the list.
TODO_TOOL = "todo"

Status = Literal["pending", "in_progress", "completed"]


@dataclass
class TodoItem:
    """One entry of the task list, as the model writes it."""

    content: str
    status: Status = "pending"
    # Leave empty for a new item; keep an item's id when updating it.
    id: str = ""


class TaskList:
    """One agent's task list within a session (see the module docstring)."""

    def __init__(self, *, prefix: str = "", fallback: str = "") -> None:
        """
        Args:
            prefix: Put before every id this list makes (a sub-agent's name and a dot).
            fallback: The current task when none of this list's items is in progress.
        """
        self._prefix = prefix
        self._fallback = fallback
        self._next = 1
        self.items: list[turn_pb2.Task] = []

    @classmethod
    def from_history(
        cls, messages: Sequence[ModelMessage], *, prefix: str = "", fallback: str = ""
    ) -> TaskList:
        """The list as the last `todo` result in `messages` left it."""
        tasks = cls(prefix=prefix, fallback=fallback)
        for items in _todo_results(messages):
            tasks._set(items)
        return tasks

    def replace(self, items: Iterable[TodoItem]) -> list[turn_pb2.Task]:
        """Make `items` the list, giving each its id; the new list."""
        old = {task.id: task for task in self.items}
        claimed: set[str] = set()
        new: list[turn_pb2.Task] = []
        pending: list[tuple[int, TodoItem]] = []
        # Ids the model kept win first, so a content match never steals one.
        for index, item in enumerate(items):
            if item.id in old and item.id not in claimed:
                claimed.add(item.id)
                new.append(turn_pb2.Task(id=item.id, content=item.content, status=item.status))
            else:
                new.append(turn_pb2.Task(content=item.content, status=item.status))
                pending.append((index, item))
        for index, item in pending:
            match = next(
                (t.id for t in self.items if t.content == item.content and t.id not in claimed),
                None,
            )
            if match is None:
                match = f"{self._prefix}{self._next}"
                self._next += 1
            claimed.add(match)
            new[index].id = match
        self.items = new
        return list(new)

    def current(self) -> str:
        """The id of the first item in progress, else the fallback ("" when none)."""
        for task in self.items:
            if task.status == "in_progress":
                return task.id
        return self._fallback

    def as_result(self) -> list[dict[str, str]]:
        """The list as the todo tool returns it (and as `from_history` reads it back)."""
        return [{"id": t.id, "content": t.content, "status": t.status} for t in self.items]

    def _set(self, items: list[dict[str, Any]]) -> None:
        self.items = [
            turn_pb2.Task(
                id=str(i.get("id", "")), content=str(i.get("content", "")), status=str(i["status"])
            )
            for i in items
            if isinstance(i, dict) and "status" in i
        ]
        for task in self.items:
            number = task.id.removeprefix(self._prefix)
            if task.id.startswith(self._prefix) and number.isdigit():
                # Never reuse an id, even of an item since removed.
                self._next = max(self._next, int(number) + 1)


def _todo_results(messages: Sequence[ModelMessage]) -> Iterable[list[dict[str, Any]]]:
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if not isinstance(part, ToolReturnPart) or part.tool_name != TODO_TOOL:
                continue
            content: object = part.content
            if isinstance(content, dict) and isinstance(items := content.get("tasks"), list):
                yield items
