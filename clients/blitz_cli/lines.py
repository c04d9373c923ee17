"""One-line texts the terminal prints, as rich markup: a session's state, a failure, a
workflow step, an approval's expiry, a turn's usage footer, a decision, a suggested rule,
and a tool's arguments in one line.

Shared by the renderer (`render.py`), the prompts and the scriptable commands, so each
thing reads the same wherever it is printed. Every text from the server or the model is
escaped before it is put in markup.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2
from rich.markup import escape

from blitz.v1 import session_pb2, turn_pb2

__all__ = [
    "accepted_line",
    "acp_agent",
    "decision_word",
    "error_line",
    "expiry_line",
    "flow_line",
    "known_workflows_line",
    "model_words",
    "one_line",
    "state_word",
    "struct_dict",
    "suggested_rule_line",
    "usage_line",
]

_SUMMARY_WIDTH = 100


def decision_word(decision: int) -> str:
    """ "once", "session", "always" or "deny"."""
    return turn_pb2.Decision.Name(decision).removeprefix("DECISION_").lower()  # type: ignore[arg-type]


def state_word(session: session_pb2.Session) -> str:
    """ "idle", "running", "parked" or "closed"."""
    return session_pb2.SessionState.Name(session.state).removeprefix("SESSION_STATE_").lower()


def acp_agent(session: session_pb2.Session) -> str:
    """The name of the ACP agent that serves the session (docs/agents.md); "" for the
    built-in agent, "blitz" (and for a session of a server older than agents)."""
    return "" if session.agent in ("", "blitz") else session.agent


def model_words(session: session_pb2.Session) -> str:
    """ "model demo", or "agent NAME" for a session an ACP agent serves: its model is the
    one its operator configured (`Session.model` reads "acp:NAME")."""
    agent = acp_agent(session)
    return f"agent {escape(agent)}" if agent else f"model {escape(session.model)}"


def accepted_line(metadata: Mapping[str, str]) -> str:
    """What an INVALID_ARGUMENT's field takes, when the server listed it (metadata
    `accepted`, comma-separated): "agent takes: blitz, claude"; "" when it did not."""
    field, accepted = metadata.get("field", ""), metadata.get("accepted", "")
    if not field or not accepted:
        return ""
    names = ", ".join(name.strip() for name in accepted.split(",") if name.strip())
    return f"[dim]{escape(field)} takes: {escape(names)}[/]"


def known_workflows_line(metadata: Mapping[str, str]) -> str:
    """ "known workflows: a, b" from a workflow's refusal (metadata `known`), or ""."""
    if metadata.get("field") != "name" or "known" not in metadata:
        return ""
    known = ", ".join(n.strip() for n in metadata["known"].split(",") if n.strip())
    if not known:
        return "[dim]no workflows are known here (`blitz workflows list`)[/]"
    return f"[dim]known workflows: {escape(known)} (`blitz workflows show NAME`)[/]"


def error_line(reason: str, message: str, field: str = "") -> str:
    """A failure as rich markup: the reason in red, then the message (escaped), after the
    request's field it names (INVALID_ARGUMENT's metadata `field`) unless it says it."""
    if field and field not in message:
        message = f"{field}: {message}"
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


def usage_line(before: turn_pb2.Usage, after: turn_pb2.Usage) -> str:
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


def struct_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct (a tool's arguments or result, a form's values) as a dict, for `one_line`."""
    return json_format.MessageToDict(value)


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # Struct numbers are doubles; counts read better whole
    return value if isinstance(value, str) else json.dumps(value)


def one_line(args: dict[str, Any], *, lone_bare: bool = True) -> str:
    """Arguments in one line: a lone value as itself (`lone_bare`), else name=value pairs."""
    if len(args) == 1 and lone_bare:
        text = _value(next(iter(args.values())))
    else:
        text = ", ".join(f"{key}={_value(value)}" for key, value in args.items())
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"
