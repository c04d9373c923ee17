"""How a tool looks in a terminal: its call on one line, a spinner with its live elapsed
time while it runs, and its result: a command's output (its first lines) and exit code,
a diff coloured, an error in red, anything else summed up on one line.

A tool whose effect has its own rendering (the task list, a question) is not shown raw:
its call and result print nothing here unless the result is an error. The `Renderer`
(`render.py`) decides when each is printed; this module only says how.
"""

from __future__ import annotations

import time

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.text import Text

from blitz.v1 import turn_pb2
from blitz_cli.lines import one_line, struct_dict

__all__ = ["Running", "print_output", "print_tool_call", "print_tool_result"]

_RESULT_LINES = 8
_RUNNING_WIDTH = 60
# Tools whose call and result another event renders: `tasks` the todo list, `question`
# and `resolution` what was asked and answered.
_RENDERED_ELSEWHERE = frozenset({"todo", "ask_user"})


class Running:
    """The spinner of a running tool: its name and arguments, and a live elapsed time."""

    def __init__(self, label: str, started: float) -> None:
        self.label = label
        self.started = started
        self._spinner = Spinner("dots")

    def __rich__(self) -> RenderableType:
        # Called at each refresh of the Live region, so the time counts on by itself.
        elapsed = time.monotonic() - self.started
        self._spinner.text = Text(f"{self.label} · {elapsed:.0f}s", style="dim")
        return self._spinner


def print_tool_call(console: Console, call: turn_pb2.ToolCall, author: str) -> Running | None:
    """The call's line (after `author`, markup already) and the spinner to show while it
    runs; nothing, and None, for a tool rendered elsewhere."""
    args = one_line(struct_dict(call.args))
    if call.name in _RENDERED_ELSEWHERE:
        return None
    console.print(f"{author}[bold cyan]⏺ {escape(call.name)}[/] {escape(args)}")
    label = f"{call.name} {args}".strip()
    if len(label) > _RUNNING_WIDTH:
        label = label[: _RUNNING_WIDTH - 1] + "…"
    return Running(label, time.monotonic())


def _looks_like_diff(text: str) -> bool:
    return text.startswith(("--- ", "diff ")) or "\n@@ " in text


def print_tool_result(console: Console, result: turn_pb2.ToolResult, *, output_shown: bool) -> None:
    """A tool's result; a command's output only if it did not stream (`output_shown`)."""
    data = struct_dict(result.result)
    if data.get("denied"):
        return  # the resolution said so, with the reason: one line per denial
    if result.name in _RENDERED_ELSEWHERE and "error" not in data:
        return
    if "error" in data:
        console.print(f"  [red]⎿ {escape(str(data['error']))}[/]")
        return
    if "exit_code" in data:
        code = int(data["exit_code"])
        style = "green" if code == 0 else "red"
        if not output_shown:
            print_output(console, str(data.get("output", "")))
        console.print(f"  [{style}]⎿ exit {code}[/]")
        return
    for value in data.values():
        if isinstance(value, str) and _looks_like_diff(value):
            console.print(Syntax(value, "diff", background_color="default"))
            return
    summary = one_line(data, lone_bare=False) if data else "done"
    console.print(f"  [dim]⎿ {escape(summary)}[/]")


def print_output(console: Console, output: str) -> None:
    """A command's output, dimmed and indented: its first lines, and how many more."""
    lines = output.rstrip("\n").splitlines()
    for line in lines[:_RESULT_LINES]:
        console.print(Text("    " + line, style="dim"))
    if len(lines) > _RESULT_LINES:
        console.print(f"    [dim]… {len(lines) - _RESULT_LINES} more lines[/]")
