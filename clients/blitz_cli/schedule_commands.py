"""`blitz schedules` (its flags: `schedule_arguments.py`): make, list, show, pause, resume,
fire now and delete schedules, and list their firings (docs/schedules.md).

`create` prints the new schedule's id and next tick; `run` the firing's session and turn
(and a `blitz watch` line to follow it). With `--json`, each prints protobuf's JSON
mapping (one object per line for lists). Exit codes as the other commands': 0 done, 1 a
failed call (or a firing that could not start its turn), 2 bad usage.
"""

from __future__ import annotations

import argparse
from datetime import UTC
from itertools import islice

from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from blitz.v1 import schedules_pb2 as sc
from blitz_cli.lines import error_line
from blitz_cli.tables import listing_console
from blitz_client import Blitz, BlitzError

__all__ = ["schedules_command"]


def _json(message: Message) -> str:
    return json_format.MessageToJson(message, indent=None)


def _time(stamp: Timestamp) -> str:
    if not stamp.seconds and not stamp.nanos:
        return "-"
    return stamp.ToDatetime(tzinfo=UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _when(schedule: sc.Schedule) -> str:
    if schedule.WhichOneof("when") == "cron":
        zone = f" ({schedule.time_zone})" if schedule.time_zone else ""
        return f"cron {schedule.cron}{zone}"
    return f"every {schedule.every.ToTimedelta()}"


def _what(schedule: sc.Schedule) -> str:
    if schedule.WhichOneof("what") == "workflow":
        params = " ".join(f"{k}={v}" for k, v in sorted(schedule.workflow.params.items()))
        return f"workflow {schedule.workflow.name} {params}".strip()
    prompt = schedule.prompt.replace("\n", " ")
    return prompt if len(prompt) <= 60 else prompt[:59] + "…"


def schedules_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz schedules ACTION …`."""
    console = Console(highlight=False)
    action = args.action or "list"
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            return _ACTIONS[action](client, args, console)
    except BlitzError as exc:
        Console(stderr=True, highlight=False).print(
            error_line(exc.reason, exc.message, exc.metadata.get("field", ""))
        )
        return 1


def _list(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    found = client.schedules()
    if args.json:
        for schedule in found:
            print(_json(schedule))
        return 0
    if not found:
        Console(stderr=True, highlight=False).print("[dim]no schedules[/]")
        return 0
    table = Table("id", "title", "when", "state", "next", "last")
    table.columns[0].no_wrap = True
    table.columns[3].no_wrap = True
    for schedule in found:
        last = schedule.last_firing
        shown = "-"
        if schedule.HasField("last_firing"):
            shown = _time(last.tick_time) + (" [red]failed[/]" if last.error else "")
        table.add_row(
            schedule.id,
            escape(schedule.title),
            escape(_when(schedule)),
            "paused" if schedule.state == sc.SCHEDULE_STATE_PAUSED else "active",
            _time(schedule.next_fire_time),
            shown,
        )
    listing_console().print(table)  # piped: as wide as its cells, not 80 columns
    return 0


def _create(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    made = client.create_schedule(
        cron=args.cron,
        every=args.every,
        time_zone=args.time_zone,
        prompt=args.prompt,
        workflow=args.workflow,
        params=dict(args.param or []),
        title=args.title,
        session_id=args.session,
        session_title=args.session_title,
        labels=dict(args.label or []),
        model=args.model,
        agent=args.agent,
        workspace=args.workspace,
        mode=args.mode,
        busy=args.busy,
        catch_up="once" if args.catch_up else "skip",
    )
    if args.json:
        print(_json(made))
        return 0
    console.print(f"schedule [bold]{made.id}[/] · {escape(_when(made))}")
    console.print(f"  next {_time(made.next_fire_time)}")
    return 0


def _show(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    schedule = client.schedule(args.schedule_id)
    if args.json:
        print(_json(schedule))
        return 0
    state = "paused" if schedule.state == sc.SCHEDULE_STATE_PAUSED else "active"
    title = f" · {escape(schedule.title)}" if schedule.title else ""
    console.print(f"[bold]{schedule.id}[/]{title} · {state}")
    console.print(f"  {escape(_when(schedule))}; next {_time(schedule.next_fire_time)}")
    console.print(f"  runs {escape(_what(schedule))}")
    where = schedule.session_id or "a new session each firing"
    console.print(f"  in {escape(where)}; as {escape(schedule.owner or 'the local user')}")
    if schedule.HasField("last_firing"):
        _print_firing(console, schedule.last_firing)
    return 0


def _state(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    paused = args.action == "pause"
    schedule = client.update_schedule(args.schedule_id, paused=paused)
    if args.json:
        print(_json(schedule))
    else:
        console.print(f"{schedule.id} {'paused' if paused else 'active'}")
    return 0


def _run(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    firing = client.run_schedule(args.schedule_id)
    if args.json:
        print(_json(firing))
    else:
        _print_firing(console, firing)
        if firing.turn_id:
            console.print(f"[dim]follow it: blitz watch {firing.session_id}[/]")
    return 1 if firing.error else 0


def _firings(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    with client.firings(args.schedule_id) as listed:
        found = list(islice(listed, max(args.limit, 0)))
    for firing in found:
        if args.json:
            print(_json(firing))
        else:
            _print_firing(console, firing)
    return 0


def _delete(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    client.delete_schedule(args.schedule_id)
    console.print(f"deleted {args.schedule_id}")
    return 0


def _print_firing(console: Console, firing: sc.ScheduleFiring) -> None:
    where = f" session {firing.session_id}" if firing.session_id else ""
    turn = f" turn {firing.turn_id}" if firing.turn_id else ""
    console.print(f"{_time(firing.tick_time)} · {firing.via}{where}{turn}")
    if firing.error:
        console.print(f"  [red]{escape(firing.error)}[/]")


_ACTIONS = {
    "list": _list,
    "create": _create,
    "show": _show,
    "pause": _state,
    "resume": _state,
    "run": _run,
    "firings": _firings,
    "delete": _delete,
}
