"""The commands made for scripts: `blitz sessions`, `watch`, `usage` and `run`.

Each handler takes its parsed arguments and the server's address and returns an exit code:
0 done, 1 a failed call or a failed turn, 2 bad usage. With `--json` they print protobuf's
JSON mapping (one object per line for streams) so that scripts can read it with `jq`;
without it, tables and events for a person. None of them prompts: `run` answers what a
turn waits on only as its flags say, and refuses the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator

from google.protobuf import json_format
from google.protobuf.message import Message
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from blitz.v1 import session_pb2, turn_pb2
from blitz_cli.lines import (
    accepted_line,
    acp_agent,
    error_line,
    flow_line,
    known_workflows_line,
    model_words,
    state_word,
)
from blitz_cli.prompts import parse_answers
from blitz_cli.render import Renderer
from blitz_cli.repos import cloned_line, source_of
from blitz_cli.tables import listing_console
from blitz_cli.turn_numbers import last_finished_turn_id, turn_id_of
from blitz_client import Blitz, BlitzError, TurnOptions

__all__ = ["run_command", "sessions_command", "usage_command", "watch_command"]


def _json(message: Message) -> str:
    return json_format.MessageToJson(message, indent=None)


def _fail(exc: BlitzError) -> int:
    err = Console(stderr=True, highlight=False)
    err.print(error_line(exc.reason, exc.message, exc.metadata.get("field", "")))
    if hint := known_workflows_line(exc.metadata) or accepted_line(exc.metadata):
        err.print(hint)
    return 1


def _chained(
    first: turn_pb2.TurnEvent, rest: Iterator[turn_pb2.TurnEvent]
) -> Iterator[turn_pb2.TurnEvent]:
    yield first
    yield from rest


# blitz sessions


def sessions_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz sessions [list | show ID | close ID | delete ID | fork ID [TURN]]`."""
    console = listing_console() if (args.action or "list") == "list" else Console(highlight=False)
    action = args.action or "list"
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            if action == "list":
                found = list(client.sessions(state=args.state))
                if args.json:
                    for session in found:
                        print(_json(session))
                    return 0
                # An agent column only where some session has an ACP agent.
                agents = any(acp_agent(session) for session in found)
                columns = ["id", "title", *(["agent"] if agents else []), "model"]
                table = Table(*columns, "state", "tokens", "updated")
                table.columns[0].no_wrap = True
                for session in found:
                    agent = [escape(session.agent or "blitz")] if agents else []
                    table.add_row(
                        session.id,
                        escape(session.title),
                        *agent,
                        escape(session.model),
                        state_word(session),
                        str(session.usage.input + session.usage.output),
                        session.update_time.ToDatetime().strftime("%Y-%m-%d %H:%M"),
                    )
                console.print(table)
                return 0
            if action == "delete":
                deleted = client.delete_session(args.session_id)
                if args.json:
                    print(json.dumps({"id": args.session_id, "workspaceDeleted": deleted}))
                else:
                    folder = " and its workspace folder" if deleted else ""
                    console.print(f"deleted {args.session_id}{folder}")
                return 0
            if action == "show":
                session = client.session(args.session_id)
            elif action == "fork":
                turn_id = (
                    turn_id_of(client, args.session_id, args.turn_id)
                    if args.turn_id
                    else last_finished_turn_id(client, args.session_id)
                )
                session = client.fork_session(args.session_id, turn_id, title=args.title)
            else:
                session = client.close_session(args.session_id)
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        print(_json(session))
        return 0
    console.print(f"[bold]{session.id}[/] {escape(session.title)}")
    console.print(
        f"  {model_words(session)} · {state_word(session)} · workspace {escape(session.workspace)}"
    )
    console.print(
        f"  {session.usage.calls} model calls · {session.usage.input} in ·"
        f" {session.usage.output} out · ${session.usage.cost_usd:.4f} · last seq"
        f" {session.last_seq}"
    )
    if session.turn_id:
        console.print(f"  turn {session.turn_id}")
    renderer = Renderer(console, interactive=False)
    for event in session.pending:
        kind = event.WhichOneof("kind") or ""
        request_id = getattr(event, kind).request_id if kind else ""
        # The id `blitz approve|deny|answer SESSION REQUEST` takes.
        console.print(f"  [bold]open request {request_id}[/]")
        renderer.event(event, replay=True)
    return 0


# blitz watch


def watch_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz watch ID [--after N] [--no-follow] [--json]`: the session's events."""
    console = Console(highlight=False)
    renderer = Renderer(console, interactive=False)  # no /thoughts to point at
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            events = client.watch(args.session_id, after_seq=args.after, follow=args.follow)
            with events:
                for event in events:
                    if args.json:
                        print(_json(event), flush=True)
                    else:
                        renderer.event(event, replay=True)
            renderer.settle()
    except BlitzError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        renderer.settle()
    return 0


# blitz usage


def usage_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz usage ID [--json]`: one row per model call, and the totals; `blitz usage
    --all [--by model|day|session|principal]`: every session's calls, summed by one of
    those."""
    if args.all:
        return _usage_all(args, server=server, token=token, ca_file=ca_file)
    if not args.session_id:
        raise ValueError("usage: give a session ID, or --all")
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            report = client.usage(args.session_id)
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        print(_json(report))
        return 0
    _usage_table(report, args.session_id)
    return 0


def _usage_all(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None
) -> int:
    """The ledgers of every session the caller sees (an admin: everyone's), summed."""
    by = args.by or "model"
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])  # calls in out usd
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            for session in list(client.sessions()):
                for entry in client.usage(session.id).entries:
                    key = {
                        "model": entry.model,
                        "day": entry.time.ToDatetime().strftime("%Y-%m-%d"),
                        "session": session.id,
                        "principal": session.owner or "(no token)",
                    }[by]
                    row = sums[key]
                    row[0] += 1
                    row[1] += entry.input
                    row[2] += entry.output
                    row[3] += entry.cost_usd
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        for key, (calls, tokens_in, tokens_out, usd) in sorted(sums.items()):
            print(json.dumps({by: key, "calls": int(calls), "input": int(tokens_in),
                              "output": int(tokens_out), "costUsd": usd}))  # fmt: skip
        return 0
    table = Table(by, "calls", "input", "output", "USD", title="usage", box=box.SIMPLE_HEAD)
    for column in table.columns:
        column.no_wrap = True
        if column.header != by:
            column.justify = "right"
    for key, (calls, tokens_in, tokens_out, usd) in sorted(sums.items()):
        table.add_row(escape(key), str(int(calls)), str(int(tokens_in)), str(int(tokens_out)),
                      f"{usd:.4f}")  # fmt: skip
    listing_console().print(table)
    return 0


def _usage_table(report: session_pb2.UsageReport, session_id: str) -> None:
    total = report.total
    # Cache columns only where a provider reported cache use: they are zeros otherwise.
    columns = ["#", "time", "turn", "model", "input"]
    columns += ["cached"] if total.cached else []
    columns += ["cache write"] if total.cache_write else []
    columns += ["output", "USD"]
    table = Table(*columns, title=f"usage of {session_id}", show_footer=True, box=box.SIMPLE_HEAD)
    for column in table.columns:
        column.no_wrap = True
        if column.header not in ("time", "turn", "model"):
            column.justify = "right"

    def row(*cells: str, cached: str, cache_write: str, output: str, usd: str) -> list[str]:
        middle = [cached] if total.cached else []
        middle += [cache_write] if total.cache_write else []
        return [*cells, *middle, output, usd]

    for number, entry in enumerate(report.entries, 1):
        table.add_row(
            *row(
                str(number),
                entry.time.ToDatetime().strftime("%H:%M:%S"),
                entry.turn_id[:10],
                entry.model,
                str(entry.input),
                cached=str(entry.cached),
                cache_write=str(entry.cache_write),
                output=str(entry.output),
                usd=f"{entry.cost_usd:.4f}" if entry.priced else "unknown",
            )
        )
    footers = row(
        "",
        "total",
        f"{total.calls} calls",
        "",
        str(total.input),
        cached=str(total.cached),
        cache_write=str(total.cache_write),
        output=str(total.output),
        usd=f"{total.cost_usd:.4f}" + ("" if total.priced else "+"),
    )
    for column, footer in zip(table.columns, footers, strict=True):
        column.footer = footer
    listing_console().print(table)


# blitz run


REFUSED = 3
"""`blitz run`'s exit code when an action was refused or a question left unanswered."""


def _refused(resolution: turn_pb2.Resolution, chosen: set[str]) -> bool:
    """Whether a resolution refused an action or left a question unanswered, other than by
    a `--deny` the caller chose (`chosen`: the requests it denied)."""
    if resolution.request_id in chosen or resolution.via == "withdrawn":
        return False
    if resolution.via in ("answer",) or resolution.answers or resolution.values.fields:
        return False
    if resolution.via == "timeout":
        return True  # an approval denied or a question closed unanswered
    return resolution.decision == turn_pb2.DECISION_DENY and not resolution.declined


def _respond(client: Blitz, args: argparse.Namespace, event: turn_pb2.TurnEvent) -> str | None:
    """Answer what the turn waits on, as the flags say; an error text if it cannot be."""
    try:
        return _answer(client, args, event)
    except BlitzError as exc:
        if exc.reason in ("ALREADY_RESOLVED", "NO_RUNNING_TURN"):
            return None  # another client, a timeout or the turn's end came first: it goes on
        raise


def _answer(client: Blitz, args: argparse.Namespace, event: turn_pb2.TurnEvent) -> str | None:
    session_id = event.session_id
    if event.HasField("approval_request"):
        request = event.approval_request
        if args.approve:
            try:
                client.decide(session_id, request.request_id, args.approve)
            except BlitzError as exc:
                if exc.reason != "INVALID_ARGUMENT" or args.approve == "once":
                    raise
                # No rule can cover this action (it holds a secret): approve it alone.
                client.decide(session_id, request.request_id, "once")
        else:
            reason = args.deny_reason or "refused: blitz run was not given --approve"
            client.decide(session_id, request.request_id, "deny", reason=reason)
        return None
    question = event.question
    if not args.answer:
        client.cancel(session_id, event.turn_id)
        return f"the agent asked {question.question!r}; give --answer to answer it"
    answers = parse_answers(question, ",".join(args.answer))
    for each in args.answer if answers is None else ():
        # A workflow asks several questions: each takes the first --answer that fits it.
        answers = parse_answers(question, each)
        if answers is not None:
            break
    if answers is None:
        client.cancel(session_id, event.turn_id)
        return (
            f"--answer {args.answer} does not answer {question.question!r} {list(question.options)}"
        )
    client.answer(session_id, question.request_id, answers)
    return None


def run_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz run PROMPT`: one turn for scripts; exit 0 when it succeeds, 1 when it fails,
    3 (`REFUSED`) when an action was refused or a question left unanswered, unless
    `--allow-refused`."""
    err = Console(stderr=True, highlight=False)
    options: TurnOptions = {"plan": args.plan, "command": args.command}
    if args.read_only:
        options["read_only"] = args.read_only
    if args.max_turns:
        options["max_turns"] = args.max_turns
    if args.timeout:
        options["timeout"] = args.timeout
    if args.approve_prompt:  # `--approve PROMPT`: the word after --approve was no scope
        if args.prompt:
            scope = escape(repr(args.approve_prompt))
            err.print(f"[red]--approve takes once, session or always, not {scope}[/]")
            return 2
        args.prompt = args.approve_prompt
    if bool(args.workflow) == bool(args.prompt):
        err.print("[red]give a PROMPT or --workflow NAME (not both)[/]")
        return 2
    params: dict[str, object] = {}
    for item in args.param:
        key, eq, value = item.partition("=")
        if not eq or not key:
            err.print(f"[red]-p {escape(item)}: expected KEY=VALUE[/]")
            return 2
        params[key] = value
    if params and not args.workflow:
        err.print("[red]-p goes with --workflow[/]")
        return 2
    source = source_of(args)
    problem = None
    refused = False
    chosen: set[str] = set()  # the requests --deny denied: the caller's own choice
    finished: turn_pb2.TurnFinished | None = None
    turn_id = ""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            session_id, cloned, made = args.session, "", False
            if not session_id:
                session = client.create_session(
                    model=args.model,
                    agent=args.agent,
                    source=source,
                    title=args.title,
                    workspace=args.workspace,
                )
                session_id, cloned, made = session.id, cloned_line(session), True
            events: Iterator[turn_pb2.TurnEvent]
            if args.workflow:
                options.pop("command", None)
                options.pop("plan", None)
                stream = client.run_workflow(session_id, args.workflow, params, **options)
                try:
                    events = _chained(next(stream), stream)
                except BlitzError as exc:
                    # Refused before any turn began: a session made for it is left empty.
                    if made:
                        with contextlib.suppress(BlitzError):
                            client.delete_session(session_id)
                    return _fail(exc)
            else:
                events = client.run(session_id, args.prompt, **options)
            if not args.json:
                err.print(f"[dim]session {session_id}[/]")
                if cloned:
                    err.print(cloned, soft_wrap=True)
            try:
                for event in events:
                    turn_id = event.turn_id
                    if args.json:
                        print(_json(event), flush=True)
                    elif event.HasField("flow_step"):
                        err.print(flow_line(event.flow_step))
                    kind = event.WhichOneof("kind")
                    if kind in ("approval_request", "question"):
                        if kind == "approval_request" and args.deny_reason:
                            chosen.add(event.approval_request.request_id)
                        problem = _respond(client, args, event) or problem
                    if kind == "resolution" and _refused(event.resolution, chosen):
                        refused = True
                    if event.HasField("finished"):
                        finished = event.finished
            except KeyboardInterrupt:
                # Ctrl-C stops the turn too, not only the watching of it.
                if turn_id:
                    with contextlib.suppress(BlitzError):
                        client.cancel(session_id, turn_id)
                err.print("[yellow]cancelled[/]")
                return 130
    except BlitzError as exc:
        return _fail(exc)
    if problem:
        err.print(f"[red]{escape(problem)}[/]")
    if finished is None:
        return 1
    if not args.json and finished.output:
        print(finished.output)
    if (problem or refused) and not args.allow_refused:
        if not args.json:
            if finished.HasField("error"):
                err.print(error_line(finished.error.reason, finished.error.message))
            if refused:
                err.print("[red]an action was refused (--approve to allow it)[/]")
        return REFUSED
    if finished.HasField("error"):
        if not args.json:
            err.print(error_line(finished.error.reason, finished.error.message))
        return 1
    return 0
