"""How a turn's events look in a terminal, on rich: the one renderer of `chat` and `watch`.

Streamed text is shown live (markdown for the answer, dimmed for reasoning) in a transient
`Live` region, then printed once for good when the text ends, so the scrollback holds one
clean copy. Reasoning folds to one line once it ends unless thoughts are expanded. While
the model works (after `accepted`, a tool result or a resolution) a spinner runs; while a
tool runs, the spinner names it with a live elapsed time. A tool whose effect has its own
rendering (the task list, a question, a denial's resolution) is not shown raw beside it.
The renderer never asks the user anything: prompts live in `prompts.py`.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from google.protobuf import json_format, struct_pb2
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.text import Text

from blitz.v1 import session_pb2, turn_pb2

__all__ = ["Renderer", "error_line", "expiry_line", "state_word", "suggested_rule_line"]

_SUMMARY_WIDTH = 100
_RESULT_LINES = 8
_TASK_MARKS = {"completed": "[green]☑[/]", "in_progress": "[yellow]◐[/]"}
_RUNNING_WIDTH = 60
# Tools whose call and result another event renders: `tasks` the todo list, `question`
# and `resolution` what was asked and answered.
_RENDERED_ELSEWHERE = frozenset({"todo", "ask_user"})
# The kinds of TurnEvent (turn.proto's `kind` oneof) printed as nothing, on purpose, and
# why. `Renderer.event` shows every other kind; tests/clients/test_event_kinds.py fails
# when a kind of the proto is in neither place.
IGNORED_KINDS: dict[str, str] = {
    "session_state": "a turn's own events say it started, parked and ended",
    "file_changed": "the tool's result shows what it changed",
}


class _Running:
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


def _decision_word(decision: int) -> str:
    """ "once", "session", "always" or "deny"."""
    return turn_pb2.Decision.Name(decision).removeprefix("DECISION_").lower()  # type: ignore[arg-type]


def state_word(session: session_pb2.Session) -> str:
    """ "idle", "running", "parked" or "closed"."""
    return session_pb2.SessionState.Name(session.state).removeprefix("SESSION_STATE_").lower()


def error_line(reason: str, message: str) -> str:
    """A failure as rich markup: the reason in red, then the message (escaped)."""
    return f"[bold red]✗ {reason}[/] {escape(message)}"


_FLOW_MARKS = {
    "started": ("…", "dim"),
    "waiting": ("⏸", "yellow"),
    "retrying": ("↻", "yellow"),
    "succeeded": ("✓", "green"),
    "failed": ("✗", "red"),
    "skipped": ("↷", "dim"),
    "cancelled": ("⊘", "red"),
}


def flow_line(step: turn_pb2.FlowStep) -> str:
    """A workflow step's progress as rich markup: `[2/5] plan ✓`, the reason of a failure
    or retry after it, and the workflow for a sub-workflow's steps."""
    mark, style = _FLOW_MARKS.get(step.status, ("?", "dim"))
    why = f" {escape(step.error)}" if step.error else ""
    of = f" [dim]({escape(step.workflow)})[/]" if step.workflow else ""
    place = escape(f"[{step.index}/{step.count}]")
    name = escape(step.title or step.id)
    return f"[{style}]{place} {name} {mark}{why}[/]{of}"


def expiry_line(expires: float, now: float | None = None) -> str:
    """When an approval is denied by itself: "auto-deny in 4:59 (at 14:05:00)"."""
    now = time.time() if now is None else now
    left = max(0, int(expires - now))
    at = time.strftime("%H:%M:%S", time.localtime(expires))
    return f"auto-deny in {left // 60}:{left % 60:02d} (at {at})"


def _usage_line(before: turn_pb2.Usage, after: turn_pb2.Usage) -> str:
    """The footer of a turn: its own calls, tokens and cost, and the session's totals."""
    calls = after.calls - before.calls
    tokens_in = after.input - before.input
    tokens_out = after.output - before.output
    cost = after.cost_usd - before.cost_usd
    price = f"${cost:.4f}" if after.priced else f"≥${cost:.4f} (some prices unknown)"
    if after.tokens_unknown:
        price += " · some token counts unknown"
    return (
        f"{calls} model call{'s' if calls != 1 else ''} · {tokens_in} in · {tokens_out} out"
        f" · {price} │ session: {after.input + after.output} tokens · ${after.cost_usd:.4f}"
    )


def suggested_rule_line(request: turn_pb2.ApprovalRequest) -> str:
    """ "[r] always allow `pytest -q …`": what the suggested-rule key does, or ""."""
    rule = request.suggested_rule
    if not request.HasField("suggested_rule") or not rule.pattern:
        return ""
    if rule.match == turn_pb2.RULE_MATCH_COMMAND_PREFIX:
        what = f"`{rule.pattern} …`"
    else:
        what = rule.label or rule.pattern
    return f"[r] always allow {what}"


def _struct(value: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(value)


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # Struct numbers are doubles; counts read better whole
    return value if isinstance(value, str) else json.dumps(value)


def _one_line(args: dict[str, Any], *, lone_bare: bool = True) -> str:
    """Arguments in one line: a lone value as itself (`lone_bare`), else name=value pairs."""
    if len(args) == 1 and lone_bare:
        text = _value(next(iter(args.values())))
    else:
        text = ", ".join(f"{key}={_value(value)}" for key, value in args.items())
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"


def _markdown(text: str) -> Markdown:
    """Markdown where a single newline breaks the line, as chat UIs render model output."""
    markdown = Markdown(text, hyperlinks=False)
    for token in markdown.parsed:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
    return markdown


def _looks_like_diff(text: str) -> bool:
    return text.startswith(("--- ", "diff ")) or "\n@@ " in text


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
        self._running: _Running | None = None  # the tool that runs now

    # The live region

    def _show(self, renderable: RenderableType) -> None:
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
            self._output(text)

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
        if replay and event.turn_id != self._turn_id:
            self._turn_id = event.turn_id
            self.console.rule(f"[dim]turn {event.turn_id}[/]", style="dim")
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
            call = event.tool_call
            self._tools.add(call.name)
            self._output_shown = False
            args = _one_line(_struct(call.args))
            if call.name not in _RENDERED_ELSEWHERE:
                self.console.print(f"{author}[bold cyan]⏺ {escape(call.name)}[/] {escape(args)}")
                label = f"{call.name} {args}".strip()
                if len(label) > _RUNNING_WIDTH:
                    label = label[: _RUNNING_WIDTH - 1] + "…"
                self._running = _Running(label, time.monotonic())
        elif kind == "tool_result":
            self._running = None
            self._tool_result(event.tool_result)
        elif kind == "approval_request":
            self.approval(event.approval_request)
        elif kind == "question":
            self.question(event.question)
        elif kind == "resolution":
            if self._running is not None:
                # Time spent waiting for a person is not the tool's run time.
                self._running.started = time.monotonic()
            self._resolution(event.resolution)
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

    def _tool_result(self, result: turn_pb2.ToolResult) -> None:
        data = _struct(result.result)
        if data.get("denied"):
            return  # the resolution said so, with the reason: one line per denial
        if result.name in _RENDERED_ELSEWHERE and "error" not in data:
            return
        if "error" in data:
            self.console.print(f"  [red]⎿ {escape(str(data['error']))}[/]")
            return
        if "exit_code" in data:
            code = int(data["exit_code"])
            style = "green" if code == 0 else "red"
            if not self._output_shown:
                self._output(str(data.get("output", "")))
            self.console.print(f"  [{style}]⎿ exit {code}[/]")
            return
        for value in data.values():
            if isinstance(value, str) and _looks_like_diff(value):
                self.console.print(Syntax(value, "diff", background_color="default"))
                return
        summary = _one_line(data, lone_bare=False) if data else "done"
        self.console.print(f"  [dim]⎿ {escape(summary)}[/]")

    def _output(self, output: str) -> None:
        lines = output.rstrip("\n").splitlines()
        for line in lines[:_RESULT_LINES]:
            self.console.print(Text("    " + line, style="dim"))
        if len(lines) > _RESULT_LINES:
            self.console.print(f"    [dim]… {len(lines) - _RESULT_LINES} more lines[/]")

    def approval(self, request: turn_pb2.ApprovalRequest) -> None:
        """The request: what would happen, its diff coloured, what a rule would cover."""
        kind = turn_pb2.ActionKind.Name(request.kind).removeprefix("ACTION_KIND_")
        body: list[RenderableType] = [Text(request.detail, style="bold")]
        if request.diff:
            body.append(Syntax(request.diff, "diff", background_color="default"))
        if request.scope_label:
            body.append(Text(f"rule scope: {request.scope_label}", style="dim"))
        always = turn_pb2.DECISION_ALWAYS in request.available_decisions
        if request.scope_label and (always or not request.available_decisions):
            # What `a` (and `r`) cover: one meaning of ALWAYS, as docs/protocol.md says.
            body.append(Text("[a]lways: your sessions in this workspace", style="dim"))
        if always and (suggested := suggested_rule_line(request)):
            body.append(Text(suggested, style="dim"))
        if request.HasField("expire_time"):
            body.append(Text(expiry_line(request.expire_time.ToNanoseconds() / 1e9), style="dim"))
        self.console.print(
            Panel(
                Group(*body),
                title=f"approve {kind} ({request.tool})",
                title_align="left",
                border_style="yellow",
                expand=False,
            )
        )

    def question(self, question: turn_pb2.Question) -> None:
        """The question and its numbered options; for an MCP server's URL to open, the host
        it leads to on a line of its own, in a style the server's words cannot take."""
        how = " (one or more: numbers separated by commas)" if question.multi_select else ""
        text, host = _url_to_open(question)
        self.console.print(f"[bold magenta]?[/] [bold]{escape(text)}[/]{how}")
        if host:
            self.console.print(f"  [reverse yellow] opens {escape(host)} [/]")
        for number, option in enumerate(question.options, 1):
            self.console.print(f"  {number}. {escape(option)}")

    def _resolution(self, resolution: turn_pb2.Resolution) -> None:
        by = f" by {resolution.resolved_by}" if resolution.resolved_by else ""
        if resolution.via == "withdrawn":
            self.console.print("[dim]  ↳ request withdrawn[/]")
        elif resolution.declined:
            self.console.print(f"[dim]  ↳ form declined{by}[/]")
        elif resolution.values.fields:
            filled = _one_line(_struct(resolution.values), lone_bare=False)
            self.console.print(f"[dim]  ↳ answered{by}: {escape(filled)}[/]")
        elif resolution.answers or resolution.via == "answer":
            answers = ", ".join(resolution.answers) or "no answer"
            self.console.print(f"[dim]  ↳ answered{by}: {escape(answers)}[/]")
        elif resolution.decision == turn_pb2.DECISION_DENY:
            reason = f": {resolution.reason}" if resolution.reason else ""
            via = " (timed out)" if resolution.via == "timeout" else ""
            stop = " and stopped the turn" if resolution.interrupt else ""
            self.console.print(f"[red]  ↳ denied{by}{via}{stop}{escape(reason)}[/]")
        else:
            how = "by rule" if resolution.via == "rule" else _decision_word(resolution.decision)
            edited = f": {resolution.command}" if resolution.command else ""
            self.console.print(f"[green]  ↳ approved {how}{by}{escape(edited)}[/]")

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
            f"[dim]{escape(_usage_line(finished.before, finished.after))}[/]", style="dim"
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
            f"[bold]blitz chat[/] · session {session.id}{title} · model {escape(session.model)}"
            f" · {state_word(session)}"
        )


def _url_to_open(question: turn_pb2.Question) -> tuple[str, str]:
    """An MCP server's URL question's text without its last line, and the host that line
    names, once checked against the URL on the line before (the server puts them there,
    after the server's words: `blitz.agent.mcp_servers`); else the text and ""."""
    text = question.question
    if not question.mcp_server:
        return text, ""
    head, _, last = text.rpartition("\n")
    url = head.rpartition("\n")[2]
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return text, ""
    if not host or last != f"opens {host}":
        return text, ""
    return head, host
