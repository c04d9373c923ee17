"""Sessions cloned from a repository, and their changes handed back: `blitz patch` and
`blitz push`, the `--repo` flags of `chat` and `run`, and the line that says a clone is
ready.

`patch` writes what ExportChanges answers (a patch series, a diff or a bundle) to a file or
to stdout, and says on stderr how many commits and on which commit they apply. `push`
starts the push, which is a turn of its own waiting for a person's approval: it prints
the `blitz approve` line that lands it and follows the turn to its end. Nothing here
approves a push: that is the point of asking. Exit codes as `blitz run`'s: 0 done, 1 a
failed call or push, 2 bad usage, 3 the push was denied.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from blitz.v1 import session_pb2, turn_pb2, workspace_pb2
from blitz_cli.lines import error_line
from blitz_cli.render_requests import print_resolution
from blitz_client import Blitz, BlitzError, Stream, repository_source

__all__ = ["cloned_line", "patch_command", "push_command", "source_of"]

REFUSED = 3
"""The exit code of a push that was denied (as `blitz run`'s for a refused action)."""


def source_of(args: argparse.Namespace) -> session_pb2.RepositorySource | None:
    """The repository a new session is cloned from, from `--repo URL[@REF]`, `--depth` and
    `--submodules`; None without `--repo`. ValueError for a flag that goes with `--repo`
    without it, or `--repo` with `--session` (that session has its workspace already)."""
    if not args.repo:
        if args.depth or args.submodules:
            raise ValueError("--depth and --submodules go with --repo")
        return None
    if args.session:
        raise ValueError("--repo makes a new session: not with --session")
    return repository_source(args.repo, depth=args.depth, submodules=args.submodules)


def cloned_line(session: session_pb2.Session) -> str:
    """ "cloned URL at COMMIT (branch B); ready" as dim markup; "" for a session from no
    repository."""
    repository = session.repository
    if not session.HasField("repository") or not repository.url:
        return ""
    at = f" at {repository.commit[:12]}" if repository.commit else ""
    branch = f" (branch {repository.branch})" if repository.branch else " (detached)"
    return f"[dim]cloned {escape(repository.url)}{escape(at)}{escape(branch)}; ready[/]"


def _json(message: Message) -> str:
    return json_format.MessageToJson(message, indent=None)


def _fail(exc: BlitzError) -> int:
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        error_line(exc.reason, exc.message, exc.metadata.get("field", ""))
    )
    return 1


def _commits(response: workspace_pb2.ExportChangesResponse) -> str:
    """ "2 commits on 1a2b3c4d5e6f" (or "a diff against …" for a diff, which has none)."""
    base = response.base[:12] or "the starting commit"
    if not response.commits:
        return f"a diff against {base}"
    count = len(response.commits)
    return f"{count} commit{'s' if count != 1 else ''} on {base}"


# blitz patch


def patch_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz patch SESSION [--format patch|diff|bundle] [-o FILE] [--squash] [-m MSG]
    [--branch B]`: the session's changes, for `git am`, `git apply` or `git fetch`."""
    to_stdout = args.output in ("", "-")
    if args.branch and args.format != "bundle":
        raise ValueError("--branch goes with --format bundle (or with blitz push)")
    if (args.squash or args.message) and args.format == "diff":
        raise ValueError("--squash and --message make commits: not with --format diff")
    if args.format == "bundle" and to_stdout and sys.stdout.isatty():
        raise ValueError("a bundle is binary: give -o FILE, or pipe it")
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            response = client.export_changes(
                args.session_id,
                args.format,
                branch=args.branch,
                message=args.message,
                squash=args.squash or bool(args.message),
            )
    except BlitzError as exc:
        return _fail(exc)
    if not response.data:
        since = response.base[:12] or "the start"
        err.print(error_line("NO_CHANGES", f"nothing changed since {since}; nothing written"))
        return 1
    if not to_stdout:
        try:
            Path(args.output).write_bytes(response.data)
        except OSError as exc:
            err.print(f"[red]cannot write {escape(args.output)}: {escape(exc.strerror or '')}[/]")
            return 1
    elif args.format != "bundle" and sys.stdout.isatty():
        text = response.data.decode("utf-8", "replace")
        Console(highlight=False).print(Syntax(text, "diff", background_color="default"))
    else:
        sys.stdout.buffer.write(response.data)  # as it is, for `| git am` or a file
        sys.stdout.buffer.flush()
    branch = f", branch {response.branch}" if response.branch else ""
    where = "" if to_stdout else f" → {args.output}"
    err.print(f"[dim]{escape(_commits(response) + branch + where)}[/]")
    return 0


# blitz push


def push_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz push SESSION [--branch B] [-m MSG] [--no-wait] [--json]`: commit the
    session's changes and push them as a new branch once a person approves; exit 0 when
    pushed (or, with `--no-wait`, when it waits), 1 when it failed, 3 when denied."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    session_id = args.session_id
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            # The push's turn comes after what the session holds now: follow it from there.
            after = client.session(session_id).last_seq
            # A message makes one commit of it (the server reads `message` only with
            # `squash`), as `/push` with a message does.
            response = client.export_changes(
                session_id,
                "push",
                branch=args.branch,
                message=args.message,
                squash=bool(args.message),
            )
            if args.json:
                print(_json(response), flush=True)
            else:
                err.print(f"[dim]{escape(_commits(response))}[/]")
            try:
                events = client.follow_turn(session_id, response.turn_id, after_seq=after)
                with events:
                    finished = _follow(events, args, response, err)
            except KeyboardInterrupt:
                err.print(
                    f"[yellow]stopped following; the push (turn {response.turn_id}) goes on:"
                    f" blitz watch {session_id}[/]"
                )
                return 130
    except BlitzError as exc:
        return _fail(exc)
    if finished == "waiting":
        return 0
    if finished is None:  # the session closed under it
        err.print("[red]the push's turn ended without finishing[/]")
        return 1
    if finished.HasField("error"):
        if not args.json:
            err.print(error_line(finished.error.reason, finished.error.message))
        return REFUSED if finished.error.reason == "PUSH_DENIED" else 1
    if not args.json and finished.output:
        print(finished.output)
    return 0


def _follow(
    events: Stream[turn_pb2.TurnEvent],
    args: argparse.Namespace,
    response: workspace_pb2.ExportChangesResponse,
    err: Console,
) -> turn_pb2.TurnFinished | Literal["waiting"] | None:
    """The push's turn followed: its `finished`, "waiting" once it asks for approval
    (`--no-wait`), None if the stream ended without one (the session closed)."""
    for event in events:
        if args.json:
            print(_json(event), flush=True)
        if event.HasField("finished"):
            return event.finished
        if event.HasField("approval_request"):
            if not args.json:
                # Flushed: a script waits on this line for the request's id.
                print(_waiting(response, args.session_id, event.approval_request), flush=True)
            if not args.wait:
                return "waiting"
        elif args.json:
            continue
        elif event.HasField("resolution"):
            print_resolution(err, event.resolution)
        elif event.HasField("notice"):
            err.print(f"[dim]{escape(event.notice.text)}[/]")
    return None


def _waiting(
    response: workspace_pb2.ExportChangesResponse,
    session_id: str,
    request: turn_pb2.ApprovalRequest,
) -> str:
    """What the push waits on, and the command that lands it."""
    head = response.commits[-1][:12] if response.commits else "the changes"
    return (
        f"push of {head} to {response.remote} as branch {response.branch} waits for approval:"
        f" blitz approve {session_id} {request.request_id}"
    )
