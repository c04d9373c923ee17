"""How a turn's events look in a terminal, on rich: the one renderer of `chat` and `watch`.

Streamed text is shown live (markdown for the answer, dimmed for reasoning) in a transient
`Live` region, then printed once for good when the text ends, so the scrollback holds one
clean copy. Reasoning folds to one line once it ends unless thoughts are expanded. While
the model works (after `accepted`, a tool result or a resolution) a spinner runs; while a
tool runs, the spinner names it with a live elapsed time. A tool whose effect has its own
rendering (the task list, a question, a denial's resolution) is not shown raw beside it.
The renderer never asks the user anything: prompts live in `prompts.py`.

This module decides what is printed when; how a tool looks is `render_tools.py`'s, how a
request and its resolution look `render_requests.py`'s, and the one-line texts are in
`lines.py` (the ones this module always exported are importable from here too).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.spinner import Spinner
from rich.text import Text

from blitz.v1 import session_pb2, turn_pb2
from blitz_cli.lines import (
    error_line,
    expiry_line,
    flow_line,
    model_words,
    state_word,
    suggested_rule_line,
    usage_line,
)
from blitz_cli.render_requests import hook_line, print_approval, print_question, print_resolution
from blitz_cli.render_tools import Running, print_output, print_tool_call, print_tool_result

__all__ = ["Renderer", "error_line", "expiry_line", "state_word", "suggested_rule_line"]

_TASK_MARKS = {"completed": "[green]☑[/]", "in_progress": "[yellow]◐[/]"}
# The kinds of TurnEvent (turn.proto's `kind` oneof) printed as nothing, on purpose, and
# why. `Renderer.event` shows every other kind; tests/clients/test_event_kinds.py fails
# when a kind of the proto is in neither place.
IGNORED_KINDS: dict[str, str] = {
    "session_state": "a turn's own events say it started, parked and ended",
    "file_changed": "the tool's result shows what it changed",
}


def _markdown(text: str) -> Markdown:
    """Markdown where a single newline breaks the line, as chat UIs render model output."""
    markdown = Markdown(text, hyperlinks=False)
    for token in markdown.parsed:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
    return markdown


class Renderer:
    """Prints events to a rich Console; keeps the live region and the last seq seen."""

    def __init__(
        self, console: Console, *, interactive: bool = True, per_call_usage: bool = False
    ) -> None:
        self.console = console
        self.interactive = interactive  # chat: /thoughts exists; watch: it does not
        self.per_call_usage = per_call_usage  # each model call's tokens under the turn
        self.show_thoughts = False
        self.last_seq = 0
        self.last_thought = ""
        self._live: Live | None = None
        self._streaming: str | None = None  # "text" or "thought" while text streams
        self._buffer = ""
        self._turn_id = ""
        self._tools: set[str] = set()  # names of tools called: their streamed output is "output"
        self._output_shown = False  # the running tool's output streamed already
        self._text_shown = False  # the turn's answer was shown (a command's is only in finished)
        self._calls: list[turn_pb2.Usage] = []  # the turn's model calls, for the footer
        self._running: Running | None = None  # the tool that runs now
        # The input line under the spinner while a turn runs (chat: type_ahead.py): what
        # is typed so far, or None when nothing reads keys.
        self.typed: Callable[[], str | None] | None = None
        self.typed_hint = "type to queue a prompt"  # shown while nothing is typed
        self.turn_numbers: dict[str, int] = {}  # a replay's turns by id: their numbers

    # The live region

    def _show(self, renderable: RenderableType) -> None:
        if self.typed is not None:
            renderable = Group(renderable, _TypedLine(self.typed, self.typed_hint))
        if self._live is None:
            self._live = Live(
                renderable,
                console=self.console,
                transient=True,
                refresh_per_second=12,
                vertical_overflow="crop",
            )
            self._live.start()
        else:
            self._live.update(renderable, refresh=True)

    def thinking(self) -> None:
        """A spinner until the next event: the running tool's, or the model's."""
        self.settle()
        if self._running is not None:
            self._show(self._running)
        else:
            self._show(Spinner("dots", text=Text("thinking…", style="dim")))

    def settle(self) -> None:
        """End the live region; streamed text is printed once, for good."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        streaming, self._streaming = self._streaming, None
        text, self._buffer = self._buffer, ""
        if streaming == "text" and text.strip():
            self._text_shown = True
            self.console.print(_markdown(text))
        elif streaming == "thought" and text.strip():
            self.last_thought = text
            self._print_thought(text)
        elif streaming == "output" and text:
            self._output_shown = True
            print_output(self.console, text)

    def _print_thought(self, text: str) -> None:
        if self.show_thoughts:
            self.console.print(Text(text.strip(), style="dim italic"))
        else:
            words = len(text.split())
            hint = " (/thoughts to expand)" if self.interactive else ""
            self.console.print(
                f"[dim]▸ thought for {words} word{'s' if words != 1 else ''}{hint}[/]"
            )

    def _tail(self, text: str) -> str:
        # Only the lines that fit are shown live: a transient region taller than the
        # screen could not be erased.
        keep = max(self.console.size.height - 4, 3)
        return "\n".join(text.splitlines()[-keep:])

    def _stream(self, kind: str, chunk: str) -> None:
        if self._streaming != kind:
            self.settle()
            self._streaming = kind
        self._buffer += chunk
        if kind == "thought":
            self._show(Text(self._tail(self._buffer), style="dim italic"))
        elif kind == "output":
            tail = Text(self._tail(self._buffer), style="dim")
            self._show(Group(tail, self._running) if self._running is not None else tail)
        else:
            self._show(_markdown(self._tail(self._buffer)))

    # Events

    def event(self, event: turn_pb2.TurnEvent, *, replay: bool = False) -> None:
        """Show one event. With `replay`, no spinner (the turn is history)."""
        if event.seq:
            self.last_seq = max(self.last_seq, event.seq)
        kind = event.WhichOneof("kind")
        if kind == "text":
            if event.author and event.author in self._tools:
                self._stream("output", event.text.text)  # an older server's tool output
            else:
                self._text(event.text)
            return
        if kind == "tool_output":
            self._stream("output", event.tool_output.output)  # a command's output as it runs
            return
        if kind == "usage":
            self._calls.append(event.usage)  # for the footer
            return
        if kind in IGNORED_KINDS:
            return
        if kind == "tool_call" and event.tool_call.partial:
            return  # the final tool_call carries the whole arguments
        self.settle()
        if replay and event.turn_id and event.turn_id != self._turn_id:
            # Numbered as /rewind and /diff take them, where the chat knows the numbers.
            self._turn_id = event.turn_id
            number = self.turn_numbers.get(event.turn_id)
            name = f"turn {number}" if number else f"turn {event.turn_id}"
            self.console.rule(f"[dim]{name}[/]", style="dim")
        author = f"[dim]{escape(event.author)}:[/] " if event.author else ""
        if kind == "accepted":
            self._text_shown = False
            self._calls = []
            self._running = None
            turn = event.accepted.turn
            if replay and turn.text:
                # Reattached: the user's own prompts, as they typed them.
                self.console.print(Text(f"› {turn.text}", style="bold"))
        elif kind == "tool_call":
            self._tools.add(event.tool_call.name)
            self._output_shown = False
            running = print_tool_call(self.console, event.tool_call, author)
            if running is not None:
                self._running = running
        elif kind == "tool_result":
            self._running = None
            print_tool_result(self.console, event.tool_result, output_shown=self._output_shown)
        elif kind == "approval_request":
            self.approval(event.approval_request, event.session_id)
        elif kind == "question":
            self.question(event.question)
        elif kind == "resolution":
            if self._running is not None:
                # Time spent waiting for a person is not the tool's run time.
                self._running.started = time.monotonic()
            print_resolution(self.console, event.resolution)
        elif kind == "tasks":
            self.tasks(event.tasks)
        elif kind == "notice":
            style = "red" if event.notice.error else "yellow"
            self.console.print(f"[{style}]ℹ {escape(event.notice.text)}[/]")
        elif kind == "history_trimmed":
            trimmed = event.history_trimmed
            self.console.print(
                f"[yellow]ℹ history trimmed: {trimmed.dropped_messages} older messages no longer"
                f" sent to the model ({trimmed.kept_turns} turns kept)[/]"
            )
        elif kind == "plan_proposed":
            steps = len(event.plan_proposed.tasks)
            self.console.print(f"[bold]▣ plan proposed[/] [dim]({steps} steps)[/]")
        elif kind == "plan_decision":
            decision = event.plan_decision
            by = f" by {decision.decided_by}" if decision.decided_by else ""
            if decision.approved:
                self.console.print(f"[green]  ↳ plan accepted{by}[/]")
            else:
                why = f": {decision.feedback}" if decision.feedback else ""
                self.console.print(f"[red]  ↳ plan rejected{by}{escape(why)}[/]")
        elif kind == "rewound":
            rewound = event.rewound
            dropped = len(rewound.dropped_turn_ids)
            restored = len(rewound.restored_paths)
            files = f", {restored} file{'s' if restored != 1 else ''} restored" if restored else ""
            self.console.print(
                f"[yellow]↺ rewound to turn {escape(rewound.to_turn_id)} ({dropped} later"
                f" turn{'s' if dropped != 1 else ''} dropped from the history{files})[/]"
            )
        elif kind == "flow_step":
            self.console.print(flow_line(event.flow_step))
        elif kind == "hook":
            self.console.print(hook_line(event.hook))
        elif kind == "finished":
            self.finished(event.finished)
            return
        if not replay and kind in ("accepted", "tool_result", "resolution", "tool_call"):
            self.thinking()

    def _text(self, text: turn_pb2.Text) -> None:
        kind = "thought" if text.thought else "text"
        if text.partial:
            self._stream(kind, text.text)
        elif text.repeat:
            # The whole text again: what streamed may have been joined midway.
            if self._streaming == kind or not self._buffer:
                self._streaming, self._buffer = kind, text.text
            self.settle()
        else:
            self.settle()
            self._streaming, self._buffer = kind, text.text
            self.settle()

    def approval(self, request: turn_pb2.ApprovalRequest, session_id: str = "") -> None:
        """The request: what would happen, its diff coloured, what a rule would cover; and
        how to answer it: the chat's keys, or, off the chat, the `blitz approve` lines."""
        print_approval(self.console, request, "" if self.interactive else session_id or "SESSION")

    def question(self, question: turn_pb2.Question) -> None:
        """The question and its numbered options; for an MCP server's URL to open, the host
        it leads to on a line of its own, in a style the server's words cannot take."""
        print_question(self.console, question)

    def tasks(self, tasks: turn_pb2.Tasks) -> None:
        """The task list, whole."""
        self.console.print("[bold]Tasks[/]")
        for item in tasks.items:
            mark = _TASK_MARKS.get(item.status, "☐")
            self.console.print(f"  {mark} {escape(item.content)}")

    def finished(self, finished: turn_pb2.TurnFinished) -> None:
        """The error, if any, and the usage footer."""
        self.settle()
        if finished.output and not self._text_shown:
            self.console.print(_markdown(finished.output))
        if finished.HasField("error"):
            self.console.print(error_line(finished.error.reason, finished.error.message))
        if finished.leftover:
            self.console.print(f"[yellow]not delivered: {escape('; '.join(finished.leftover))}[/]")
        if self.per_call_usage and len(self._calls) > 1:
            each = ", ".join(f"{u.input}→{u.output}" for u in self._calls)
            self.console.print(f"[dim]tokens per model call (in→out): {each}[/]")
        self._calls = []
        self.console.rule(
            f"[dim]{escape(usage_line(finished.before, finished.after))}[/]", style="dim"
        )

    def server(self, info: session_pb2.ServerInfo) -> None:
        """The server's line, under the session's: version, protocol, what is on."""
        features = "".join(f" · {escape(feature)}" for feature in info.features)
        self.console.print(
            f"[dim]server {escape(info.server_version)} · {escape(info.protocol)}"
            f" revision {info.protocol_revision}{features}[/]"
        )

    def session(self, session: session_pb2.Session) -> None:
        """A session's header line."""
        title = f" · {escape(session.title)}" if session.title else ""
        self.console.print(
            f"[bold]blitz chat[/] · session {session.id}{title} · {model_words(session)}"
            f" · {state_word(session)}"
        )


class _TypedLine:
    """The input line as the live region draws it at each refresh."""

    def __init__(self, typed: Callable[[], str | None], hint: str) -> None:
        self._typed = typed
        self._hint = hint

    def __rich__(self) -> RenderableType:
        line = self._typed()
        if line is None:
            return Text("")
        if not line:
            return Text(f"› {self._hint} (Enter sends it)", style="dim")
        return Text(f"› {line}▏")
