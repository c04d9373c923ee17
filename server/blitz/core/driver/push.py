"""The `/push` command: a session's changes pushed to its repository's origin as a new
branch, once someone approves it.

`/push [BRANCH]` on the first line, and a commit message on the lines after it (then the
changes go as one commit with it; without, one commit per turn, as Blitz made them). The
commit is made first, so the approval shows exactly what would land: `ActionKind` PUSH,
its scope the remote and the branch (a SESSION or ALWAYS rule covers later pushes of that
branch there), its diff git's. ExportChanges(PUSH) prepares the commit itself and starts
this turn as `/push BRANCH @COMMIT`, which pushes that commit and no other.

The turn parks on the approval like an agent's, so any client decides it, a restart
keeps it, and the session's pre_tool hooks, its rules or its bypass mode decide it
without asking, in the order an agent's actions are decided. Approved,
the push runs (no force: a branch that exists and has moved is refused, PUSH_REJECTED);
denied, nothing is pushed and the turn ends PUSH_DENIED. Its `finished.output` names the
branch and the commit.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import structlog

from blitz.core.active_turn import ActiveTurn
from blitz.core.driver.runners import OpenWorkspace, Outcome, _Ends
from blitz.core.repository import repo_error, repository_of
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import ApprovalResult, Parked, Resolution, TurnIO, decide_action
from blitz.repos import PushPlan, RepoError, Repositories, SourceRefused
from blitz.size_limits import clip, clip_label
from blitz.store import SessionRecord
from blitz.v1 import turn_pb2 as t

__all__ = ["COMMAND", "PushArgs", "PushRunner", "parse_push"]

log = structlog.get_logger(__name__)

COMMAND = "/push"
# What the approval shows of the change.
_DIFF_MAX = 64 * 1024
_USAGE = "write /push [BRANCH], a commit message on the lines after it if you want one"


@dataclass(frozen=True)
class PushArgs:
    branch: str = ""
    # A commit ExportChanges prepared ("" to make one now).
    commit: str = ""
    message: str = ""


def parse_push(text: str) -> PushArgs:
    """`/push [BRANCH] [@COMMIT]` and the message below; INVALID_ARGUMENT on `turn.text`."""
    first, _, rest = text.strip().partition("\n")
    branch = commit = ""
    for word in first.split()[1:]:
        if word.startswith("@") and not commit:
            commit = word[1:]
        elif not branch and not word.startswith("@"):
            branch = word
        else:
            raise invalid_argument("turn.text", f"{word!r} is one word too many: {_USAGE}")
    return PushArgs(branch=branch, commit=commit, message=rest.strip())


class PushRunner(_Ends):
    """Carries out `/push` turns (asked before every other runner)."""

    def __init__(self, *, repos: Repositories | None, open_workspace: OpenWorkspace) -> None:
        self._repos = repos
        self._open_workspace = open_workspace

    def claims(self, turn: t.Turn, session: SessionRecord) -> bool:
        words = turn.text.split(None, 1)
        return turn.command and bool(words) and words[0].lower() == COMMAND

    async def start(self, active: ActiveTurn, io: TurnIO) -> Outcome:
        session = active.session
        repos = self._repos
        if repos is None or repository_of(session) is None:
            raise invalid_argument(
                "turn.text", "this session did not start from a repository: nothing to push"
            )
        args = parse_push(active.turn.text)
        try:
            if args.commit:
                plan = await repos.planned(session.id, branch=args.branch, commit=args.commit)
            else:
                plan = await repos.prepare_push(
                    session.id,
                    self._open_workspace(session),
                    branch=args.branch,
                    message=args.message,
                    squash=bool(args.message),
                )
        except SourceRefused as exc:
            raise invalid_argument("branch", str(exc)) from None
        except RepoError as exc:
            raise repo_error(exc, branch=args.branch) from None
        request_id = "push_" + uuid.uuid4().hex[:16]
        approval = t.ApprovalRequest(
            request_id=request_id,
            tool="push",
            kind=t.ACTION_KIND_PUSH,
            detail=f"push {plan.commit[:12]} to {plan.remote} as branch {plan.branch}",
            diff=clip(plan.stat, _DIFF_MAX, what="diff"),
            scope_label=clip_label(f"push: {plan.remote} {plan.branch}"),
        )
        # Decided as an agent's action is (ports/gate.py): the session's pre_tool hooks,
        # its mode (bypass approves a push), its rules, else a person. Not refused in plan
        # or read-only mode: a person asked for it, and it changes no file here.
        shown = {"remote": plan.remote, "branch": plan.branch, "commit": plan.commit}
        verdict = await decide_action(
            io, active.policy(first=True), approval, shown, mutating=False
        )
        if verdict.allowed is False:
            raise _denied(verdict.reason)
        if verdict.allowed:
            return await self._push(active, plan)
        state = {"request_id": request_id, **plan.__dict__}
        return Parked(
            history=json.dumps(state).encode(),
            requests=[t.TurnEvent(approval_request=verdict.request)],
        )

    async def resume(
        self, active: ActiveTurn, io: TurnIO, results: dict[str, Resolution]
    ) -> Outcome:
        assert active.rec.history is not None
        state = json.loads(active.rec.history)
        result = results.get(state.pop("request_id"))
        if not isinstance(result, ApprovalResult) or not result.approved:
            reason = result.reason if isinstance(result, ApprovalResult) else ""
            raise _denied(reason)
        return await self._push(active, PushPlan(**state))

    async def _push(self, active: ActiveTurn, plan: PushPlan) -> Outcome:
        assert self._repos is not None
        try:
            commit = await self._repos.push(active.session_id, plan, principal=active.session.owner)
        except RepoError as exc:
            raise repo_error(exc, branch=plan.branch) from None
        log.info("pushed", branch=plan.branch, commit=commit)
        return f"Pushed branch {plan.branch} to {plan.remote}: commit {commit}."


def _denied(reason: str) -> BlitzError:
    said = f": {reason}" if reason else ""
    return BlitzError(Reason.PUSH_DENIED, f"the push was not approved{said}; nothing was pushed")
