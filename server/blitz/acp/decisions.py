"""How an ACP agent's requests are decided and answered (A1, A3, A4): Blitz's approvals.

The runner hands each `Ask` of its process's inbox to `decide`. A permission request
(A1) becomes an `ApprovalRequest` by table K (approvals.py), a file write (A3) and a
terminal (A4) each ask their own WRITE or COMMAND approval, unless an approved
permission of the same turn covers them: its paths for writes, its command line once for
a terminal. Then the turn decides where it can, in this order: plan mode and a
read-only turn refuse what would change something; the session's mode approves the
kinds it approves; a stored rule decides; else a person does, and `decide` returns
`Parked` with the agent's request left open in the live process. `answer` gives the
agent the outcome: its own option for a permission (table D), or the write done or the
terminal started in Blitz's workspace and box. The session's pre_tool hooks (docs/hooks.md)
are asked after plan mode and read-only and before the mode and the rules, as for the
built-in agent's actions; a hook's rewrite is not taken, since the agent runs its own
tool. After a restart no process holds the
request any more: `restart_answers` is what the reloaded agent is told instead, and an
approval leaves a one-use grant for the request the agent sends again.

Nothing here keeps state of its own: what a turn has approved lives on the process, what
a parked turn waits on in `AcpState`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from acp import RequestError

from blitz.acp.approvals import approval_of, option_for
from blitz.acp.client import Ask
from blitz.acp.process import AgentProcess
from blitz.acp.state import AcpState
from blitz.acp.terminals import command_line
from blitz.agent.diffs import unified_diff
from blitz.paths import PathRefused, Workspace
from blitz.ports import ApprovalResult, Parked, Resolution, TurnIO, TurnPolicy
from blitz.v1 import turn_pb2 as t

__all__ = ["answer", "decide", "restart_answers"]

_MUTATING = frozenset(
    {t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE, t.ACTION_KIND_COMMAND, t.ACTION_KIND_MCP}
)
# Permission kinds that change nothing: asked, never refused, in read-only and plan modes.
_LOOKING = frozenset({"read", "search", "think"})


async def decide(
    io: TurnIO, process: AgentProcess, state: AcpState, policy: TurnPolicy, ask: Ask
) -> Parked | None:
    """Answer the ask at once where the mode, the turn or a rule decides; else park."""
    mapper = process.mapper
    assert mapper is not None
    approval, kind_name = _approval(process, ask)
    if ask.kind == "permission":
        call_id = approval.request_id
        call = ask.params["toolCall"]
        for event in mapper.final_call(call_id, call):
            io.emit(event)
        if _granted(state, approval):
            await answer(io, process, ask, True, None)
            return None
    elif ask.kind == "write" and _covered_write(process, approval):
        await answer(io, process, ask, True, None)
        return None
    elif ask.kind == "terminal" and _covered_command(process, approval):
        await answer(io, process, ask, True, None)
        return None
    verdict = await _verdict(io, policy, approval, kind_name, _tool_input(ask))
    if verdict is not None:
        await answer(io, process, ask, verdict, None)
        return None
    # A person decides: the turn parks with the agent's request open.
    request_id = _request_id(process, approval.request_id)
    approval.request_id = request_id
    ask.request_id = request_id
    process.parked[request_id] = ask
    state.parked[request_id] = {
        "kind": kind_name,
        "title": approval.detail[:200],
    }
    return Parked(history=state.dump(), requests=[t.TurnEvent(approval_request=approval)])


def _approval(process: AgentProcess, ask: Ask) -> tuple[t.ApprovalRequest, str]:
    mapper = process.mapper
    assert mapper is not None
    task = mapper.current_task()
    if ask.kind == "permission":
        call = dict(ask.params["toolCall"])
        known = mapper.call(str(call.get("toolCallId", "")))
        if known is not None:
            merged = {
                "kind": known.kind,
                "title": known.title,
                "rawInput": known.raw_input,
                "content": known.content,
                "locations": known.locations,
            }
            call = {**{k: v for k, v in merged.items() if v}, **call}
        approval = approval_of(
            call,
            request_id=str(call.get("toolCallId") or "permission"),
            workspace=process.workspace,
            task_id=task,
        )
        return approval, str(call.get("kind") or "")
    if ask.kind == "write":
        path = str(ask.params["path"])
        workspace = Workspace(process.workspace, resolved=True)
        try:
            rel, old = workspace.current(path)
        except (PathRefused, OSError):
            rel, old = path, None
        ask.params["rel"], ask.params["old"] = rel, old
        old_text = old.decode("utf-8", errors="replace") if old is not None else None
        diff = unified_diff(old_text, str(ask.params["content"]), rel)
        approval = t.ApprovalRequest(
            request_id="write-" + uuid.uuid4().hex[:10],
            tool="write_text_file",
            kind=t.ACTION_KIND_WRITE,
            detail=rel,
            diff=diff,
            scope_label=f"write: {rel}",
            task_id=task,
        )
        return approval, "edit"
    line = str(ask.params["command"])
    if ask.params.get("args"):
        line = command_line(line, ask.params["args"])
    ask.params["line"] = line
    approval = t.ApprovalRequest(
        request_id="terminal-" + uuid.uuid4().hex[:10],
        tool="terminal",
        kind=t.ACTION_KIND_COMMAND,
        detail=line,
        scope_label=f"command: {line}",
        task_id=task,
    )
    return approval, "execute"


def _request_id(process: AgentProcess, base: str) -> str:
    if base not in process.parked:
        return base
    n = 2
    while f"{base}#{n}" in process.parked:
        n += 1
    return f"{base}#{n}"


async def _verdict(
    io: TurnIO,
    policy: TurnPolicy,
    approval: t.ApprovalRequest,
    kind_name: str,
    tool_input: Mapping[str, Any],
) -> bool | None:
    """True or False where the turn, a hook, its mode or a rule decides; None: a person."""
    mutating = approval.kind in _MUTATING and kind_name not in _LOOKING
    if kind_name == "switch_mode" and policy.plan:
        return False  # the agent asking to leave plan mode: its plan is proposed
    if policy.plan and mutating:
        _notice(io, f"Refused in plan mode: {approval.detail}")
        return False
    if policy.read_only and mutating:
        _notice(io, f"Refused ({policy.read_only}): {approval.detail}")
        return False
    hooked = await io.pre_tool(approval, tool_input)
    if hooked is not None and hooked.decision in ("allow", "deny"):
        return hooked.decision == "allow"
    if hooked is not None and hooked.decision == "ask":
        if hooked.request is not None:
            approval.asked_by_hook = hooked.request.asked_by_hook
        return None  # a person decides, whatever the mode or a rule would say
    if approval.kind in policy.approved_kinds:
        _notice(io, f"Approved by the session's mode ({policy.mode}): {approval.detail}")
        return True
    decided = await io.rule_decides(approval)
    if decided is not None:
        return decided.allowed
    return None


def _tool_input(ask: Ask) -> dict[str, Any]:
    """What a pre_tool hook is shown of the agent's request: a permission's raw input, a
    write's path and content, a terminal's command line."""
    if ask.kind == "permission":
        call = ask.params.get("toolCall") or {}
        raw = call.get("rawInput") if isinstance(call, Mapping) else None
        return dict(raw) if isinstance(raw, Mapping) else {}
    if ask.kind == "write":
        return {"file_path": str(ask.params.get("path", "")), "content": ask.params.get("content")}
    return {"command": str(ask.params.get("line") or ask.params.get("command", ""))}


def _notice(io: TurnIO, text: str) -> None:
    io.emit(t.TurnEvent(notice=t.Notice(text=text)))


def _granted(state: AcpState, approval: t.ApprovalRequest) -> bool:
    """A one-use grant a restart left for this request (docs/agents.md)."""
    for grant in state.grants:
        if grant.get("title") == approval.detail[:200]:
            state.grants.remove(grant)
            return True
    return False


def _covered_write(process: AgentProcess, approval: t.ApprovalRequest) -> bool:
    """An approved permission of this turn that names the path covers its write."""
    return approval.detail in process.approved_paths


def _covered_command(process: AgentProcess, approval: t.ApprovalRequest) -> bool:
    """An approved permission of this turn for the same command line, used once."""
    if approval.detail in process.approved_commands:
        process.approved_commands.remove(approval.detail)
        return True
    return False


async def answer(
    io: TurnIO,
    process: AgentProcess,
    ask: Ask,
    allowed: bool,
    resolution: Resolution | None,
) -> None:
    """Answer the agent's request: the option (A1), or the write or terminal done."""
    if ask.future.done():
        return
    if ask.kind == "permission":
        if allowed:
            approval, _ = _approval(process, ask)
            if approval.kind == t.ACTION_KIND_COMMAND:
                process.approved_commands.append(approval.detail)
            elif approval.kind in (t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE):
                process.approved_paths.update(approval.detail.split(", "))
        ask.future.set_result({"outcome": option_for(ask.params["options"], allow=allowed)})
        return
    if not allowed:
        reason = getattr(resolution, "reason", "") or "the user denied it"
        ask.future.set_exception(RequestError(-32000, f"denied: {reason}"))
        return
    if ask.kind == "write":
        await _write(io, process, ask)
        return
    cwd = process.workspace
    if ask.params.get("cwd"):
        try:
            cwd = Workspace(process.workspace, resolved=True).resolve(str(ask.params["cwd"]))
        except PathRefused as exc:
            ask.future.set_exception(RequestError.invalid_params({"cwd": str(exc)}))
            return
    terminal = process.start_terminal(ask.params, cwd)
    ask.future.set_result(terminal.id)


async def _write(io: TurnIO, process: AgentProcess, ask: Ask) -> None:
    rel, old = ask.params.get("rel"), ask.params.get("old")
    if rel is None:
        _approval(process, ask)
        rel, old = ask.params["rel"], ask.params["old"]
    workspace = Workspace(process.workspace, resolved=True)
    try:
        rel = workspace.locate(str(ask.params["path"]))
        await io.before_file_change(rel, old)
        await asyncio.to_thread(workspace.write, rel, str(ask.params["content"]).encode())
    except (PathRefused, OSError) as exc:
        ask.future.set_exception(RequestError.invalid_params({"path": rel, "details": str(exc)}))
        return
    kind = t.FileChanged.KIND_CREATED if old is None else t.FileChanged.KIND_MODIFIED
    call = process.mapper.edit_call() if process.mapper is not None else ""
    io.emit(t.TurnEvent(file_changed=t.FileChanged(path=rel, kind=kind, tool_call_id=call)))
    ask.future.set_result(None)


def restart_answers(state: AcpState, results: Mapping[str, Resolution]) -> str:
    """What an agent that loaded its session after a restart is told of the requests it
    waited on (docs/agents.md, "Restarts and replicas"); each approval leaves a grant."""
    lines = []
    for request_id, resolution in results.items():
        waited = state.parked.pop(request_id, {})
        title = waited.get("title") or "act"
        if isinstance(resolution, ApprovalResult) and resolution.approved:
            lines.append(
                f"Blitz restarted while your request to {title} waited. The user approved"
                " it: do it now, then go on."
            )
            state.grants.append({"kind": waited.get("kind", ""), "title": title})
        else:
            reason = getattr(resolution, "reason", "") or "no reason given"
            lines.append(
                f"Blitz restarted while your request to {title} waited. The user denied"
                f" it: {reason}. Go on without it."
            )
    return "\n".join(lines) or "Go on."
