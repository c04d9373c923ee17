"""The flags of `blitz schedules` (the command: `schedule_commands.py`, imported only when
it runs, as every command's)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["add_schedules"]


def _every(text: str) -> float:
    """An interval as a flag: seconds, or a number with s, m, h or d."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], units[text[-1]]) if text[-1:] in units else (text, 1)
    try:
        value = float(number) * unit
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an interval: {text!r} (90, 90s, 15m, 2h, 1d)"
        ) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"not an interval: {text!r}")
    return value


def _pair(text: str) -> tuple[str, str]:
    """KEY=VALUE, as a flag."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return key, value


def add_schedules(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    server_flags: Callable[..., None],
    handler: object,
) -> None:
    """The `schedules` command and its actions; `handler` runs it."""
    parser = commands.add_parser(
        "schedules",
        help="turns and workflows that start on a schedule",
        description="Schedules start a turn (a prompt) or a workflow at each tick of a cron"
        " expression or an interval, as you, in a new session each time or in one session"
        " (docs/schedules.md).",
    )
    server_flags(parser)
    parser.add_argument("--json", action="store_true", help="protobuf's JSON, a line each")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="your schedules (the default)")
    create = actions.add_parser("create", help="a new schedule, active at once")
    when = create.add_mutually_exclusive_group(required=True)
    when.add_argument(
        "--cron",
        metavar="EXPR",
        help='5 fields (minute hour day month weekday), or 6 with seconds first: "0 3 * * *"',
    )
    when.add_argument(
        "--every", type=_every, metavar="INTERVAL", help="90, 90s, 15m, 2h or 1d (at least 1 s)"
    )
    create.add_argument(
        "--time-zone", default="", metavar="ZONE", help="the cron's IANA time zone (default UTC)"
    )
    what = create.add_mutually_exclusive_group(required=True)
    what.add_argument("--prompt", metavar="TEXT", help="what each turn is asked")
    what.add_argument("--workflow", metavar="NAME", help="a workflow each firing runs")
    create.add_argument(
        "-p",
        "--param",
        action="append",
        type=_pair,
        metavar="KEY=VALUE",
        help="a parameter of the workflow (again for more)",
    )
    create.add_argument("--title", default="", help="what the schedule is for")
    create.add_argument(
        "--session",
        metavar="ID",
        default="",
        help="fire into this session (default: a new session each firing)",
    )
    create.add_argument(
        "--session-title",
        default="",
        metavar="TEMPLATE",
        help="each new session's title: {date} {time} {datetime} {schedule}"
        " (default '{schedule} {datetime}')",
    )
    create.add_argument(
        "--label",
        action="append",
        type=_pair,
        metavar="KEY=VALUE",
        help="a label of each new session",
    )
    create.add_argument("--model", default="", help="each new session's model")
    create.add_argument("--agent", default="", help="each new session's agent")
    create.add_argument(
        "--workspace", default="", metavar="NAME", help="each new session in this workspace"
    )
    create.add_argument(
        "--mode",
        default="",
        choices=("ask", "accept_edits", "read_only", "plan", "bypass"),
        help="how each new session's actions are approved (default ask)",
    )
    create.add_argument(
        "--busy",
        default="enqueue",
        choices=("reject", "enqueue", "interrupt"),
        help="with --session, when it has a turn: queue behind it (the default), fail, or"
        " interrupt it",
    )
    create.add_argument(
        "--catch-up",
        action="store_true",
        help="fire once at start for ticks missed while no server ran (default: skip them)",
    )
    for name, text in (
        ("show", "one schedule: its next tick and last firing"),
        ("pause", "stop firing"),
        ("resume", "fire again, from the next tick"),
        ("run", "fire it now, once"),
        ("firings", "its firings, the latest first"),
        ("delete", "delete it and its firings"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("schedule_id", metavar="ID")
        if name == "firings":
            action.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (20)")
    for action in actions.choices.values():
        # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        server_flags(action, default=argparse.SUPPRESS)
    parser.set_defaults(client_handler=handler)
