"""How what a turn asks of a person looks in a terminal: an approval request in a panel
(what would happen, its diff coloured, what a rule would cover, when it expires), a
question with its numbered options, and the resolution of either, on one line.

Only shown here, never asked: the prompts that read the answer are in `prompts.py`. An
MCP server's URL to open names its host on a line of its own, in a style that the
server's words cannot take, once the host was checked against the URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from blitz.v1 import turn_pb2
from blitz_cli.lines import (
    decision_word,
    expiry_line,
    one_line,
    struct_dict,
    suggested_rule_line,
)

__all__ = ["print_approval", "print_question", "print_resolution"]


def print_approval(
    console: Console, request: turn_pb2.ApprovalRequest, session_id: str = ""
) -> None:
    """The request: what would happen, its diff coloured, what a rule would cover. Then
    how to answer it: the chat's keys explained, or with `session_id` (a script's view:
    `sessions show`, `watch`) the `blitz approve` and `blitz deny` lines."""
    kind = _kind_word(request.kind)
    # A push's tool is "push": the kind says it already.
    tool = f" ({request.tool})" if request.tool and request.tool.upper() != kind else ""
    body: list[RenderableType] = [Text(request.detail, style="bold")]
    if request.asked_by_hook:
        body.append(
            Text(f"the hook {request.asked_by_hook} asks for your decision", style="magenta")
        )
    if request.HasField("hook_edit"):
        asked = one_line(struct_dict(request.hook_edit.original_input), lone_bare=False)
        body.append(
            Text(f"edited by the hook {request.hook_edit.hook_id}; asked: {asked}", style="magenta")
        )
    if request.diff:
        body.append(Syntax(request.diff, "diff", background_color="default"))
    if request.scope_label:
        body.append(Text(f"rule scope: {request.scope_label}", style="dim"))
    if request.destructive:
        body.append(Text("destructive: no broader rule is offered", style="red"))
    if not session_id:
        body += _key_lines(request)
    if request.HasField("expire_time"):
        body.append(Text(expiry_line(request.expire_time.ToNanoseconds() / 1e9), style="dim"))
    console.print(
        Panel(
            Group(*body),
            title=f"approve {kind}{tool}",
            title_align="left",
            border_style="yellow",
            expand=False,
        )
    )
    # Outside the box and never wrapped, so that each line can be copied whole.
    for line in _script_lines(request, session_id) if session_id else []:
        console.print(line, soft_wrap=True)


def _key_lines(request: turn_pb2.ApprovalRequest) -> list[RenderableType]:
    """What the chat's keys `a` and `r` would save."""
    always = turn_pb2.DECISION_ALWAYS in request.available_decisions
    lines: list[RenderableType] = []
    if request.scope_label and (always or not request.available_decisions):
        # What `a` (and `r`) cover: one meaning of ALWAYS, as docs/protocol.md says.
        confirm = ", once confirmed" if request.destructive else ""
        lines.append(Text(f"[a]lways: your sessions in this workspace{confirm}", style="dim"))
    if always and (suggested := suggested_rule_line(request)):
        lines.append(Text(suggested, style="dim"))
    return lines


def _script_lines(request: turn_pb2.ApprovalRequest, session_id: str) -> list[Text]:
    """The commands that answer the request from a shell."""
    ids = f"{session_id} {request.request_id}"
    available = set(request.available_decisions)
    lines = [f"blitz approve {ids}"]
    scopes = [
        word
        for word, decision in (("session", turn_pb2.DECISION_SESSION),
                               ("always", turn_pb2.DECISION_ALWAYS))
        if not available or decision in available
    ]  # fmt: skip
    if scopes:
        lines.append(f"blitz approve {ids} --scope {'|'.join(scopes)}")
    if request.HasField("suggested_rule") and request.suggested_rule.pattern:
        lines.append(f"blitz approve {ids} --suggested    # {request.suggested_rule.label}")
    lines.append(f'blitz deny {ids} --reason "…"')
    return [Text(f"  {line}", style="cyan") for line in lines]


def _kind_word(kind: int) -> str:
    """ "COMMAND", "WRITE", "PUSH", …; "ACTION 9" for a kind newer than these stubs."""
    try:
        return turn_pb2.ActionKind.Name(kind).removeprefix("ACTION_KIND_")  # type: ignore[arg-type]
    except ValueError:
        return f"ACTION {kind}"


def print_question(console: Console, question: turn_pb2.Question) -> None:
    """The question and its numbered options; for an MCP server's URL to open, the host
    it leads to on a line of its own, in a style the server's words cannot take."""
    how = " (one or more: numbers separated by commas)" if question.multi_select else ""
    text, host = _url_to_open(question)
    console.print(f"[bold magenta]?[/] [bold]{escape(text)}[/]{how}")
    if host:
        console.print(f"  [reverse yellow] opens {escape(host)} [/]")
    for number, option in enumerate(question.options, 1):
        console.print(f"  {number}. {escape(option)}")


def print_resolution(console: Console, resolution: turn_pb2.Resolution) -> None:
    """How a request was resolved, on one line: by whom, and approved how, denied why, or
    answered what."""
    by = f" by {resolution.resolved_by}" if resolution.resolved_by else ""
    if resolution.via == "hook":
        by = f" by the hook {resolution.resolved_by}"
    if resolution.via == "withdrawn":
        console.print("[dim]  ↳ request withdrawn[/]")
    elif resolution.declined:
        console.print(f"[dim]  ↳ form declined{by}[/]")
    elif resolution.values.fields:
        filled = one_line(struct_dict(resolution.values), lone_bare=False)
        console.print(f"[dim]  ↳ answered{by}: {escape(filled)}[/]")
    elif resolution.answers or resolution.via == "answer":
        answers = ", ".join(resolution.answers) or "no answer"
        console.print(f"[dim]  ↳ answered{by}: {escape(answers)}[/]")
    elif resolution.decision == turn_pb2.DECISION_DENY:
        reason = f": {resolution.reason}" if resolution.reason else ""
        via = " (timed out)" if resolution.via == "timeout" else ""
        stop = " and stopped the turn" if resolution.interrupt else ""
        console.print(f"[red]  ↳ denied{by}{via}{stop}{escape(reason)}[/]")
    else:
        how = {"rule": "by rule", "hook": ""}.get(resolution.via)
        if how is None:
            how = decision_word(resolution.decision)
        edited = f": {resolution.command}" if resolution.command else ""
        console.print(f"[green]  ↳ approved{' ' + how if how else ''}{by}{escape(edited)}[/]")
    if resolution.HasField("saved_rule") and resolution.saved_rule.label:
        effect = "denies" if resolution.saved_rule.effect == turn_pb2.RULE_EFFECT_DENY else "allows"
        console.print(f"[dim]    rule saved: {effect} {escape(resolution.saved_rule.label)}[/]")


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


def hook_line(outcome: turn_pb2.HookOutcome) -> str:
    """One line (markup) for a hook's run: what it decided, of what, and why."""
    decision = turn_pb2.HookDecision.Name(outcome.decision).removeprefix("HOOK_DECISION_")  # type: ignore[arg-type]
    style = {"DENY": "red", "ALLOW": "green", "CONTINUE": "yellow"}.get(decision, "dim")
    about = f" {outcome.tool}" if outcome.tool else ""
    words = {"NONE": "ran", "ALLOW": "allowed", "DENY": "denied", "ASK": "asks a person",
             "CONTINUE": "goes on"}.get(decision, decision.lower())  # fmt: skip
    what = escape(f"{outcome.event}{about}")
    line = f"[{style}]⚓ hook {escape(outcome.hook_id)} ({what}): {words}"
    if outcome.failed:
        line += f" — failed: {escape(outcome.error)}"
    elif outcome.reason:
        line += f": {escape(outcome.reason)}"
    if outcome.HasField("updated_input"):
        rewritten = one_line(struct_dict(outcome.updated_input), lone_bare=False)
        line += f" (input rewritten: {escape(rewritten)})"
    if outcome.additional_context:
        line += " (added context)"
    if outcome.system_message:
        line += f"\n  {escape(outcome.system_message)}"
    return line + "[/]"
