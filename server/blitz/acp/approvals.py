"""Tables K and D of docs/agents.md as code: an agent's permission request as an approval.

An ACP agent asks before it acts (`session/request_permission`, A1) with the tool call
and the options it offers. `approval_of` makes of that tool call the `ApprovalRequest`
that Blitz's rules, modes and people decide on (table K): its action kind, the detail a
rule matches (a command line, the paths, a URL), a diff where the agent sent one, and
the scope a rule would cover. `option_for` turns the decision back into the agent's own
option (table D). They are apart from the update tables (mapping.py) because they are
the approval's side: what is decided, not what is shown. Nothing here performs I/O or
decides anything: decisions.py does, with these.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from blitz.acp.mapping import diff_of, relative
from blitz.size_limits import DETAIL_MAX, DIFF_MAX, clip, clip_label
from blitz.v1 import turn_pb2 as t

__all__ = ["DENY_OUTCOME", "approval_of", "option_for"]

_KINDS = {
    "execute": t.ACTION_KIND_COMMAND,
    "edit": t.ACTION_KIND_WRITE,
    "move": t.ACTION_KIND_WRITE,
    "delete": t.ACTION_KIND_DELETE,
    "fetch": t.ACTION_KIND_NETWORK,
}
# Answered for a withdrawn request, or a DENY with no reject option (table D).
DENY_OUTCOME: dict[str, Any] = {"outcome": "cancelled"}


# Table K


def _command_line(raw: Any) -> str:
    if isinstance(raw, Mapping):
        command = raw.get("command") or raw.get("cmd")
        if isinstance(command, list) and all(isinstance(p, str) for p in command):
            # ["bash", "-lc", "LINE"] is how Codex sends one shell line.
            if len(command) == 3 and command[1] in ("-c", "-lc") and command[0].endswith("sh"):
                return command[2]
            return shlex.join(command)
        if isinstance(command, str):
            return command
    return ""


def approval_of(
    call: Mapping[str, Any], *, request_id: str, workspace: Path, task_id: str = ""
) -> t.ApprovalRequest:
    """The ApprovalRequest of a permission request's `toolCall` (merged with what its
    tool call said before), by table K."""
    kind_name = str(call.get("kind") or "")
    kind = _KINDS.get(kind_name, t.ACTION_KIND_MCP)
    title = str(call.get("title") or kind_name or "a tool")
    raw = call.get("rawInput")
    content = list(call.get("content") or [])
    diff = "".join(diff_of(i, workspace) for i in content if i.get("type") == "diff")
    paths = [
        relative(str(p), workspace)
        for p in [
            *(loc.get("path") for loc in call.get("locations") or []),
            *(i.get("path") for i in content if i.get("type") == "diff"),
        ]
        if p
    ]
    paths = list(dict.fromkeys(paths))
    if kind == t.ACTION_KIND_COMMAND:
        detail = _command_line(raw) or title
        label = f"command: {detail}"
    elif kind in (t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE):
        detail = ", ".join(paths) or title
        verb = "write" if kind == t.ACTION_KIND_WRITE else "delete"
        label = f"{verb}: {paths[0]}" if len(paths) == 1 else f"tool: {title}"
    elif kind == t.ACTION_KIND_NETWORK:
        url = raw.get("url") if isinstance(raw, Mapping) else None
        detail = str(url or title)
        label = f"network: {detail}"
    else:
        detail = title
        label = f"tool: {title}"
    return t.ApprovalRequest(
        request_id=request_id,
        tool=kind_name or "other",
        kind=kind,  # type: ignore[arg-type]
        detail=clip(detail, DETAIL_MAX, what="detail"),
        diff=clip(diff, DIFF_MAX, what="diff"),
        scope_label=clip_label(label),
        task_id=task_id,
    )


# Table D


def option_for(options: Iterable[Mapping[str, Any]], *, allow: bool) -> dict[str, Any]:
    """The agent's option for Blitz's decision: allow_once first (a SESSION or ALWAYS rule
    is Blitz's own, not the agent's), reject_once first; none fitting: cancelled."""
    kinds = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    listed = list(options)
    for kind in kinds:
        for option in listed:
            if option.get("kind") == kind:
                return {"outcome": "selected", "optionId": option.get("optionId")}
    return dict(DENY_OUTCOME)
