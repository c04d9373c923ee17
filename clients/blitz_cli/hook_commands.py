"""`blitz hooks` (its flags: `hook_arguments.py`): list, show, make, change, test and
delete hooks (docs/hooks.md).

`create` prints the new hook's id, and an HTTP hook's signing secret, which the server
shows only then; `test` runs the hook once and prints what it decided, its exit code or
HTTP status and the start of what it wrote. With `--json`, each prints protobuf's JSON
mapping (one object per line for lists). Exit codes as the other commands': 0 done, 1 a
failed call (or a tested hook that failed), 2 bad usage (a flag, `--input` that is no
JSON object, an `update` that changes nothing). A refused field is named in the error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import turn_pb2 as t
from blitz_cli.lines import error_line
from blitz_cli.tables import listing_console
from blitz_client import HOOK_EVENT_NAMES, Blitz, BlitzError

__all__ = ["hooks_command"]

_EVENTS = {event: name for name, event in HOOK_EVENT_NAMES.items()}
_SHOWN = 60  # characters of a command or URL in the list


def _json(message: Message) -> str:
    return json_format.MessageToJson(message, indent=None)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _runs(hook: hk.Hook) -> str:
    return f"$ {hook.command}" if hook.command else hook.url


def _whose(hook: hk.Hook) -> str:
    if hook.declared:
        return "declared"
    return "server-wide" if hook.server_wide else "yours"


def _matchers(hook: hk.Hook) -> str:
    parts = [
        f"{name} {' '.join(values)}"
        for name, values in (
            ("tools", hook.tools),
            ("commands", hook.commands),
            ("paths", hook.paths),
        )
        if values
    ]
    return "; ".join(parts) or "-"


def _decision(outcome: t.HookOutcome) -> str:
    return t.HookDecision.Name(outcome.decision).removeprefix("HOOK_DECISION_").lower()


def hooks_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz hooks ACTION …`."""
    console = Console(highlight=False)
    action = args.action or "list"
    # What the client refuses (exit 2), before it connects.
    if action == "test":
        args.input = _input(args.input)
    elif action == "update":
        args.changes = _changes(args)
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            return _ACTIONS[action](client, args, console)
    except BlitzError as exc:
        Console(stderr=True, highlight=False).print(
            error_line(exc.reason, exc.message, exc.metadata.get("field", ""))
        )
        return 1


def _input(text: str | None) -> dict[str, Any] | None:
    """`--input`'s JSON object; ValueError (a usage error, exit 2) for anything else."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--input is not JSON: {exc.msg} (at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError("--input must be a JSON object, as docs/hooks.md shows an event's")
    return value


def _list(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    found = client.hooks()
    if args.json:
        for hook in found:
            print(_json(hook))
        return 0
    if not found:
        Console(stderr=True, highlight=False).print("[dim]no hooks[/]")
        return 0
    table = Table("id", "event", "runs", "matchers", "state", "whose", "description")
    table.columns[0].no_wrap = True
    for hook in found:
        table.add_row(
            hook.id,
            _EVENTS.get(hook.event, "?"),
            escape(_cut(_runs(hook))),
            escape(_matchers(hook)),
            "disabled" if hook.disabled else "active",
            _whose(hook),
            escape(hook.description),
        )
    listing_console().print(table)  # piped: as wide as its cells, not 80 columns
    return 0


def _show(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    hook = client.hook(args.hook_id)
    if args.json:
        print(_json(hook))
    else:
        _print_hook(console, hook)
    return 0


def _create(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    made = client.create_hook(
        args.event,
        command=args.command or "",
        url=args.url or "",
        tools=args.tools or (),
        commands=args.commands or (),
        paths=args.paths or (),
        time_limit=args.timeout,
        fail_open=args.fail_open,
        description=args.description,
        server_wide=args.server_wide,
    )
    if args.json:
        print(_json(made))
        return 0
    _print_hook(console, made.hook)
    if made.secret:
        console.print(f"  secret [bold]{made.secret}[/] [dim](shown only now: keep it)[/]")
    return 0


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    """`update`'s flags as `update_hook`'s arguments; ValueError when none is given."""
    changes: dict[str, Any] = {
        "command": args.command,
        "url": args.url,
        "tools": args.tools,
        "commands": args.commands,
        "paths": args.paths,
        "time_limit": args.timeout,
        "fail_open": args.fail_open,
        "description": args.description,
        "disabled": args.disabled,
    }
    if all(value is None for value in changes.values()):
        raise ValueError("hooks update: say what to change (blitz hooks update --help)")
    return changes


def _update(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    hook = client.update_hook(args.hook_id, **args.changes)
    if args.json:
        print(_json(hook))
    else:
        _print_hook(console, hook)
    return 0


def _delete(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    client.delete_hook(args.hook_id)
    console.print(f"deleted {args.hook_id}")
    return 0


def _test(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    tested = client.test_hook(args.hook_id, input=args.input, session_id=args.session)
    outcome = tested.outcome
    if args.json:
        print(_json(tested))
        return 1 if outcome.failed else 0
    seconds = outcome.duration.ToTimedelta().total_seconds()
    if outcome.failed:
        console.print(f"[red]failed[/] {escape(outcome.error)}")
    said = f": {escape(outcome.reason)}" if outcome.reason else ""
    console.print(f"decision [bold]{_decision(outcome)}[/]{said} [dim]({seconds:.2f} s)[/]")
    if outcome.additional_context:
        console.print(f"  context: {escape(outcome.additional_context)}")
    if outcome.HasField("updated_input"):
        rewritten = json.dumps(json_format.MessageToDict(outcome.updated_input))
        console.print(f"  input rewritten: {escape(rewritten)}")
    if outcome.system_message:
        console.print(f"  message: {escape(outcome.system_message)}")
    if client.hook(args.hook_id).command:
        status = f"exit {tested.status}" if tested.status >= 0 else "no exit: it was stopped"
    else:
        status = f"HTTP {tested.status}" if tested.status > 0 else "no HTTP answer"
    console.print(f"  {status}")
    for name, text in (("stdout", tested.stdout), ("stderr", tested.stderr)):
        if text:
            console.print(f"  {name}: {escape(text.rstrip())}")
    return 1 if outcome.failed else 0


def _print_hook(console: Console, hook: hk.Hook) -> None:
    state = " · [yellow]disabled[/]" if hook.disabled else ""
    about = f" · {escape(hook.description)}" if hook.description else ""
    event = _EVENTS.get(hook.event, "?")
    console.print(f"hook [bold]{hook.id}[/] · {event} · {_whose(hook)}{state}{about}")
    console.print(f"  runs {escape(_runs(hook))}")
    if _matchers(hook) != "-":
        console.print(f"  for {escape(_matchers(hook))}")
    timeout = hook.timeout.ToTimedelta().total_seconds()
    failing = "goes on (fail open)" if hook.fail_open else "denies what it can (fail closed)"
    console.print(f"  timeout {timeout:g} s; when it fails, {failing}")
    if hook.declared:
        console.print(f"  declared in the server's configuration as {escape(hook.declared)}")


_ACTIONS = {
    "list": _list,
    "show": _show,
    "create": _create,
    "update": _update,
    "delete": _delete,
    "test": _test,
}
