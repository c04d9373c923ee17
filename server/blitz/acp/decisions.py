"""How an ACP agent's requests are decided and answered (A1, A3, A4): Blitz's approvals.

The runner hands each `Ask` of its process's inbox to `decide`. A permission request
(A1) becomes an `ApprovalRequest` by table K (approvals.py), a file write (A3) and a
terminal (A4) each ask their own WRITE or COMMAND approval, unless an approved
permission of the same turn covers them: its paths for writes, its command line once for
a terminal. Then the turn decides where it can, in the order every agent shares
(`blitz.ports.gate`): plan mode and a read-only turn refuse what would change something;
the session's pre_tool hooks (docs/hooks.md) may allow, deny, ask or rewrite; the
session's mode approves the kinds it approves; a stored rule decides; else a person does,
and `decide` returns `Parked` with the agent's request left open in the live process. A
hook's rewrite of a write (its path and content) or a terminal (its command line) is taken,
since Blitz carries those out: the rewritten path passes the workspace's path gate, and a
person is shown the rewritten action; of a permission request nothing is rewritten, since
the agent runs its own tool. `answer` gives the agent the outcome: its own option for a
permission (table D; ACP carries no reason with it), or the write done or the terminal
started in Blitz's workspace and box, or for a refused one an error whose message says
why. After a restart no process holds the request any more: `restart_answers` is what the
reloaded agent is told instead, and an approval leaves a one-use grant for the request the
agent sends again.

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
from blitz.ports import (
    ApprovalResult,
    Parked,
    Resolution,
    Rewrites,
    TurnIO,
    TurnPolicy,
    decide_action,
)
from blitz.ports.gate import PLAN_REFUSAL
from blitz.size_limits import DIFF_MAX, clip, clip_label
from blitz.v1 import turn_pb2 as t

__all__ = ["answer", "decide", "restart_answers"]

_MUTATING = frozenset(
    {t.ACTION_KIND_WRITE, t.ACTION_KIND_DELETE, t.ACTION_KIND_COMMAND, t.ACTION_KIND_MCP}
)
# Permission kinds that change nothing: asked, never refused, in read-only and plan modes.
_LOOKING = frozenset({"read", "search", "think"})
# What the log says of a request refused before anyone was asked.
_NOTED = {"plan": "Refused in plan mode: {0}", "read_only": "Refused ({1}): {0}"}


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
    if kind_name == "switch_mode" and policy.plan:
        # The agent asking to leave plan mode: its plan is proposed.
        await answer(io, process, ask, False, ApprovalResult(False, PLAN_REFUSAL))
        return None
    verdict = await decide_action(
        io,
        policy,
        approval,
        _tool_input(ask),
        mutating=approval.kind in _MUTATING and kind_name not in _LOOKING,
        rewrites=_rewrites(process, ask),
    )
    if verdict.by in _NOTED:
        _notice(io, _NOTED[verdict.by].format(approval.detail, policy.read_only))
    if verdict.rewritten is not None:
        _rewrite(ask, verdict.rewritten)
    if verdict.allowed is not None:
        refusal = None if verdict.allowed else ApprovalResult(False, verdict.reason)
        await answer(io, process, ask, verdict.allowed, refusal)
        return None
    # A person decides: the turn parks with the agent's request open.
    approval = verdict.request
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
        approval = _write_request(rel, old, str(ask.params["content"]))
        approval.request_id, approval.task_id = "write-" + uuid.uuid4().hex[:10], task
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


def _write_request(rel: str, old: bytes | None, content: str) -> t.ApprovalRequest:
    """The WRITE approval of `content` over what `rel` holds (None: no file yet)."""
    old_text = old.decode("utf-8", errors="replace") if old is not None else None
    return t.ApprovalRequest(
        tool="write_text_file",
        kind=t.ACTION_KIND_WRITE,
        detail=rel,
        diff=clip(unified_diff(old_text, content, rel), DIFF_MAX, what="diff"),
        scope_label=clip_label(f"write: {rel}"),
    )


def _request_id(process: AgentProcess, base: str) -> str:
    if base not in process.parked:
        return base
    n = 2
    while f"{base}#{n}" in process.parked:
        n += 1
    return f"{base}#{n}"


def _rewrites(process: AgentProcess, ask: Ask) -> frozenset[str]:
    """What of the agent's request a pre_tool hook may rewrite: a write's path and content
    and a terminal's command line, which Blitz carries out; nothing of a permission, whose
    tool the agent runs itself."""
    if ask.kind == "write":
        workspace = Workspace(process.workspace, resolved=True)

        async def reshape(rewritten: dict[str, Any]) -> t.ApprovalRequest | str:
            path, content = str(rewritten["file_path"]), str(rewritten["content"])
            try:
                rel, old = await asyncio.to_thread(workspace.current, path)
            except (PathRefused, OSError) as exc:
                return str(exc)
            return _write_request(rel, old, content)

        return Rewrites({"file_path", "content"}, reshape)
    if ask.kind == "terminal":
        return Rewrites({"command"})  # read as a command line (hooks/pre_tool.py)
    return Rewrites()


def _rewrite(ask: Ask, rewritten: Mapping[str, Any]) -> None:
    """Take a hook's rewrite of a write or a terminal: what Blitz does once it may."""
    if ask.kind == "write":
        ask.params["path"], ask.params["content"] = rewritten["file_path"], rewritten["content"]
        ask.params.pop("rel", None)
        ask.params.pop("old", None)
    elif ask.kind == "terminal":
        _set_line(ask, str(rewritten["command"]))


def _set_line(ask: Ask, line: str) -> None:
    """Have a terminal run `line`, a whole shell line, instead of what the agent sent."""
    ask.params["command"], ask.params["line"] = line, line
    ask.params.pop("args", None)


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
        # What refused it (a hook, a rule, the mode, a person) and why, in the error's words:
        # the one place ACP lets a reason reach the agent.
        reason = getattr(resolution, "reason", "") or "the user denied it"
        ask.future.set_exception(RequestError(-32000, f"denied: {reason}"))
        return
    if ask.kind == "terminal" and isinstance(resolution, ApprovalResult) and resolution.command:
        # The command the person approved: as a hook rewrote it, or as they edited it.
        _set_line(ask, resolution.command)
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
