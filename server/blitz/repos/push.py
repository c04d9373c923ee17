"""A push, in two steps: the commit prepared (and shown for approval), then pushed.

`prepare` makes the commit(s) as an export would and keeps them at
`refs/blitz/push/BRANCH`; the plan it returns says what would land where. `push` sends
exactly that commit, and only if the plan still matches what was prepared and the origin
recorded at the clone (a plan handed back cannot redirect a push elsewhere or send another
commit). It is `git push ORIGIN COMMIT:refs/heads/BRANCH`, never forced, from Blitz's own
git directory with the source's credential: the origin refuses a branch that exists and is
not an ancestor (`RepoError("rejected")`). A branch is checked as
`git check-ref-format --branch` would, and is never the origin's default branch unless
the operator allows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from blitz.redact import mask_known
from blitz.repos import changes
from blitz.repos.bare import Bare
from blitz.repos.errors import RepoError, SourceRefused
from blitz.repos.git import Ran, clean_message
from blitz.repos.layout import Meta
from blitz.repos.settings import Credential
from blitz.repos.sources import Origin, check_branch

__all__ = ["PushPlan", "checked_branch", "default_branch_name", "plan_of", "prepare", "push"]

_STAT_MAX = 256 * 1024


@dataclass(frozen=True)
class PushPlan:
    """What a push would do: `commit` to `remote` as `branch`, the `commits` on top of
    `base`; `stat` git's `--stat` of it followed by the diff itself (`--patch-with-stat`,
    binary files as one line, cut at 256 KiB), for whoever approves."""

    remote: str
    branch: str
    commit: str
    base: str
    stat: str
    commits: list[str] = field(default_factory=list)


def default_branch_name(session_id: str) -> str:
    return "blitz/" + session_id.removeprefix("s_")[:12]


def checked_branch(session_id: str, branch: str, meta: Meta, *, allow_default: bool) -> str:
    """The branch a push goes to: `branch`, or the session's own name when empty."""
    branch = check_branch(branch or default_branch_name(session_id))
    if branch == meta.default_branch and not allow_default:
        raise SourceRefused(
            "branch",
            f"{branch!r} is the origin's default branch: a push goes to a new branch"
            " (this server does not push to the default branch)",
        )
    return branch


async def prepare(
    bare: Bare, workspace: Path, meta: Meta, *, branch: str, message: str, squash: bool
) -> PushPlan:
    got = await changes.tip(bare, workspace, squash=squash, message=message)
    if not got.commits:
        raise RepoError("nothing", "nothing changed since the start commit: nothing to push")
    await bare.update_refs([f"update refs/blitz/push/{branch} {got.commit}"])
    return await _plan(bare, meta, branch, got.commit)


async def plan_of(bare: Bare, meta: Meta, *, branch: str, commit: str) -> PushPlan:
    """The plan `prepare` made for `branch`, if its commit is `commit`."""
    prepared = await bare.maybe_rev(f"refs/blitz/push/{branch}")
    if not prepared or not commit or prepared != commit:
        raise SourceRefused(
            "commit", f"no push of {commit[:40]!r} to branch {branch!r} was prepared"
        )
    return await _plan(bare, meta, branch, prepared)


async def push(bare: Bare, plan: PushPlan, origin: Origin, credential: Credential | None) -> str:
    ran = await bare.git.run(
        [
            "push",
            "--porcelain",
            "--no-verify",
            origin.fetch_url,
            f"{plan.commit}:refs/heads/{plan.branch}",
        ],
        git_dir=bare.git_dir,
        protocols=(origin.scheme,),
        credential=(credential, origin.fetch_url) if credential is not None else None,
        ok=range(256),
    )
    if ran.code == 0:
        return plan.commit
    refused = [line for line in ran.text.splitlines() if line.startswith("!")]
    if refused:
        why = refused[0].split("\t")[-1]
        raise RepoError(
            "rejected", clean_message(f"the origin refused branch {plan.branch}: {why}")
        )
    raise RepoError("unreachable", _said(ran) or "the origin could not be reached")


async def _plan(bare: Bare, meta: Meta, branch: str, commit: str) -> PushPlan:
    base = meta.start
    args = ["diff", "--stat=100", "--patch", "-M", "--no-ext-diff", "--no-textconv", "--no-color"]
    shown = await bare.run([*args, base, commit], keep=_STAT_MAX, cut_ok=True)
    stat = shown.text
    if shown.cut:
        stat = stat[: stat.rfind("\n") + 1] + "[… the diff is cut here]\n"
    return PushPlan(
        remote=meta.url,
        branch=branch,
        commit=commit,
        base=base,
        stat=mask_known(stat),
        commits=await bare.commits(base, commit),
    )


def _said(ran: Ran) -> str:
    return clean_message(ran.err.decode("utf-8", "replace"))
