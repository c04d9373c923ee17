"""The commands that act on a session from a script: `blitz approve`, `deny`, `answer`,
`rules`, `diff`, `files` and `cat`.

Each is one call (or two: a listing and its details), so that a person away from the
chat, or a bot, can answer what a parked turn waits on (`blitz sessions show ID` lists
the open requests) and look at what the agent did. Listings print `--json` (protobuf's
JSON mapping, a line each) or a table as wide as where it goes. Exit codes as the other
client commands: 0 done, 1 a failed call, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from typing import Any

from google.protobuf import json_format
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from blitz.v1 import session_pb2, turn_pb2, workspace_pb2
from blitz_cli.lines import error_line
from blitz_cli.tables import listing_console
from blitz_cli.turn_numbers import turn_id_of
from blitz_client import Blitz, BlitzError

__all__ = [
    "answer_command",
    "cat_command",
    "decide_command",
    "diff_command",
    "files_command",
    "rules_command",
]


def _fail(exc: BlitzError) -> int:
    Console(stderr=True, highlight=False).print(
        error_line(exc.reason, exc.message, exc.metadata.get("field", ""))
    )
    return 1


def _json(message: Any) -> str:
    return json_format.MessageToJson(message, indent=None)


def _request(session: session_pb2.Session, request_id: str) -> turn_pb2.TurnEvent | None:
    for event in session.pending:
        kind = event.WhichOneof("kind")
        if kind in ("approval_request", "question"):
            if getattr(event, kind).request_id == request_id:
                return event
    return None


# blitz approve | deny


def decide_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz approve SESSION REQUEST [--scope …] [--suggested]`, `blitz deny SESSION
    REQUEST [--reason …] [--stop]`."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            rule = None
            if args.deny:
                decision = "deny"
            else:
                decision = args.scope
                if args.suggested:
                    event = _request(client.session(args.session_id), args.request_id)
                    if event is None or not event.approval_request.HasField("suggested_rule"):
                        raise ValueError(
                            f"{args.request_id} is no open request with a suggested rule"
                        )
                    rule = event.approval_request.suggested_rule
                    if decision == "once":
                        decision = "always"  # a rule is made only by SESSION or ALWAYS
            client.decide(
                args.session_id,
                args.request_id,
                decision,
                reason=getattr(args, "reason", "") or "",
                interrupt=getattr(args, "stop", False),
                rule=rule,
            )
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps({"requestId": args.request_id, "decision": decision}))
    else:
        print(f"{args.request_id}: {decision}{' (' + rule.pattern + ')' if rule else ''}")
    return 0


# blitz answer


def answer_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz answer SESSION REQUEST TEXT…`, or `--values JSON` / `--decline` for a form."""
    values = None
    if args.values is not None:
        try:
            values = json.loads(args.values)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--values is not JSON: {exc}") from None
        if not isinstance(values, dict):
            raise ValueError("--values must be a JSON object")
    if not (args.answers or values is not None or args.decline):
        raise ValueError("give the answers, --values JSON or --decline")
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            client.answer(
                args.session_id,
                args.request_id,
                args.answers or (),
                values=values,
                decline=args.decline,
            )
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps({"requestId": args.request_id, "answered": True}))
    else:
        print(f"{args.request_id}: answered")
    return 0


# blitz rules


def _enum_word(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower()


def rules_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz rules [list] SESSION`, `blitz rules revoke SESSION RULE`."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            if args.action == "revoke":
                client.revoke_rule(args.session_id, args.rule_id)
                if args.json:
                    print(json.dumps({"id": args.rule_id, "revoked": True}))
                else:
                    print(f"revoked {args.rule_id}")
                return 0
            rules = client.rules(args.session_id)
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        for rule in rules:
            print(_json(rule))
        return 0
    table = Table("id", "scope", "effect", "matches", "expires", box=box.SIMPLE_HEAD)
    table.columns[0].no_wrap = True
    for rule in rules:
        matches = rule.scope_label
        if rule.match == turn_pb2.RULE_MATCH_COMMAND_PREFIX:
            matches = f"commands starting `{rule.pattern}`"
        elif rule.match == turn_pb2.RULE_MATCH_PATH_GLOB:
            matches = f"paths {rule.pattern}"
        expires = (
            rule.expire_time.ToDatetime().strftime("%Y-%m-%d %H:%M")
            if rule.HasField("expire_time")
            else "never"
        )
        effect = "deny" if rule.effect == turn_pb2.RULE_EFFECT_DENY else "allow"
        table.add_row(
            rule.id,
            _enum_word(session_pb2.RuleScope, rule.scope, "RULE_SCOPE_"),
            effect,
            escape(matches),
            expires,
        )
    listing_console().print(table)
    return 0


# blitz diff | files


def diff_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz diff SESSION [--turn TURN]`: what changed in the session (or in one turn),
    as a unified diff."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            turn_id = turn_id_of(client, args.session_id, args.turn) if args.turn else ""
            response = client.diff(args.session_id, turn_id=turn_id)
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        print(_json(response))
        return 0
    if listing_console().is_terminal:
        Console(highlight=False).print(Syntax(response.diff, "diff", background_color="default"))
    else:
        print(response.diff, end="")  # as it is, for `| git apply` or `| less`
    if response.truncated:
        Console(stderr=True, highlight=False).print(
            f"[yellow]the diff was cut at the server's limit; {len(response.paths)} files"
            " changed[/]"
        )
    return 0


def _file_entry(client: Blitz, session_id: str, path: str) -> workspace_pb2.FileEntry | None:
    """The entry of `path` when it is a file (ListFiles lists folders only): looked up in
    its folder's listing. None when it is not there, or not a file."""
    path = posixpath.normpath(path.strip("/"))
    if path in (".", ".."):
        return None
    try:
        entries = client.list_files(session_id, posixpath.dirname(path))
    except BlitzError:
        return None
    return next((e for e in entries if e.path == path and not e.directory), None)


def files_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz files SESSION [PATH]`: a folder of the session's workspace; PATH a file, its
    entry, and a pointer at `blitz cat`."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            try:
                entries = client.list_files(args.session_id, args.path)
            except BlitzError as exc:
                entry = None
                if exc.reason == "FILE_NOT_FOUND" and args.path:
                    entry = _file_entry(client, args.session_id, args.path)
                if entry is None:
                    raise
                entries = [entry]
                Console(stderr=True, highlight=False).print(
                    f"{escape(entry.path)} is a file: `blitz cat {args.session_id}"
                    f" {escape(entry.path)}` prints it"
                )
    except BlitzError as exc:
        return _fail(exc)
    if args.json:
        for entry in entries:
            print(_json(entry))
        return 0
    table = Table("path", "size", box=box.SIMPLE_HEAD)
    table.columns[1].justify = "right"
    for entry in entries:
        name = entry.path + ("/" if entry.directory else "")
        table.add_row(escape(name), "" if entry.directory else str(entry.size))
    listing_console().print(table)
    return 0


# Control characters but newline and tab: a file's bytes must not drive the terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def cat_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz cat SESSION PATH`: one file of the session's workspace; its bytes as they are
    when piped, as text on a terminal; a note on stderr when the server's read cap cut it."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            response = client.read_file(args.session_id, args.path)
    except BlitzError as exc:
        return _fail(exc)
    if sys.stdout.isatty():
        text = response.content.decode("utf-8", errors="replace")
        sys.stdout.write(_CONTROLS.sub("\ufffd", text))
    else:
        sys.stdout.buffer.write(response.content)
    sys.stdout.flush()
    if response.truncated:
        Console(stderr=True, highlight=False).print(
            f"[yellow]cut at the server's read cap: {len(response.content)} of"
            f" {response.size} bytes[/]"
        )
    return 0
