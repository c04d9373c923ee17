"""The flags of `blitz hooks` (the command: `hook_commands.py`, imported only when it runs,
as every command's).

The events are the SDK's (`HOOK_EVENT_NAMES`, the proto's names), so a new event is a
new choice here without a word changed. Flag values are checked as far as the client
can (a timeout is seconds within the server's bound); what only the server knows (a
URL it may reach, a pattern a rule can read) it refuses, naming the field.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from blitz_client import HOOK_EVENT_NAMES

__all__ = ["add_hooks"]

_TIMEOUT_MAX = 600.0  # the server's bound on a run (hooks.proto, Hook.timeout)


def _timeout(text: str) -> float:
    """A hook's time limit as a flag: seconds above 0, at most 10 minutes."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= _TIMEOUT_MAX:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not above 0 and at most 600 seconds")
    return value


def _matchers(parser: argparse.ArgumentParser, *, clearing: bool) -> None:
    """--tools, --commands and --paths: each takes one or more values, and may be given
    again; in `update`, given with none it clears the list."""
    count = "*" if clearing else "+"
    cleared = " (none: clear it)" if clearing else ""
    for flag, metavar, text in (
        ("--tools", "TOOL", "the tools it runs for, by name or glob: run_command Bash 'mcp.*'"),
        ("--commands", "PREFIX", "only commands starting with one of these words: 'git push'"),
        ("--paths", "GLOB", "only writes and deletes of paths one of these matches: 'src/**'"),
    ):
        parser.add_argument(
            flag,
            nargs=count,
            action="extend",
            default=None,
            metavar=metavar,
            help=f"pre_tool and post_tool: {text}{cleared}",
        )


def add_hooks(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    server_flags: Callable[..., None],
    handler: object,
) -> None:
    """The `hooks` command and its actions; `handler` runs it."""
    parser = commands.add_parser(
        "hooks",
        help="commands and HTTP endpoints asked at fixed points of a turn",
        description="Hooks are commands (run in the session's command box) or HTTP"
        " endpoints (POSTed, signed) that Blitz asks at fixed points of your turns: they"
        " can allow, deny or rewrite an action, add context, refuse a prompt or make the"
        " agent go on (docs/hooks.md).",
    )
    server_flags(parser)
    parser.add_argument("--json", action="store_true", help="protobuf's JSON, a line each")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="the hooks that run in your sessions, in order (the default)")

    create = actions.add_parser(
        "create",
        help="a new hook; an HTTP hook's signing secret is printed, once",
        description=f"A hook that runs at EVENT ({', '.join(HOOK_EVENT_NAMES)}) in your"
        " sessions: a --command or a --url.",
    )
    create.add_argument(
        "event",
        choices=tuple(HOOK_EVENT_NAMES),
        metavar="EVENT",
        help=f"when it runs: {', '.join(HOOK_EVENT_NAMES)}",
    )
    kind = create.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--command",
        metavar="CMD",
        help="a shell command, run with the event's JSON on stdin (exit 2 blocks)",
    )
    kind.add_argument("--url", help="https://… (or http:// to an address the server allows)")
    _matchers(create, clearing=False)
    create.add_argument(
        "--timeout",
        type=_timeout,
        default=None,
        metavar="S",
        help="seconds a run may take (default 60, at most 600)",
    )
    create.add_argument(
        "--fail-open",
        action="store_true",
        help="when it fails, go on as if it answered nothing (default: deny what it can)",
    )
    create.add_argument("--description", default="", help="what it is for")
    create.add_argument(
        "--server-wide", action="store_true", help="every principal's sessions (admins)"
    )

    update = actions.add_parser("update", help="change what is given, leave the rest")
    update.add_argument("hook_id", metavar="ID")
    changed = update.add_mutually_exclusive_group()
    changed.add_argument("--command", metavar="CMD", help="a command hook's new command")
    changed.add_argument("--url", help="an HTTP hook's new URL")
    _matchers(update, clearing=True)
    update.add_argument(
        "--timeout", type=_timeout, default=None, metavar="S", help="seconds a run may take"
    )
    failing = update.add_mutually_exclusive_group()
    failing.add_argument(
        "--fail-open",
        dest="fail_open",
        action="store_const",
        const=True,
        default=None,
        help="when it fails, go on as if it answered nothing",
    )
    failing.add_argument(
        "--fail-closed",
        dest="fail_open",
        action="store_const",
        const=False,
        help="when it fails, deny what it can (the default of a new hook)",
    )
    update.add_argument("--description", default=None, help="what it is for")
    state = update.add_mutually_exclusive_group()
    state.add_argument(
        "--disable",
        dest="disabled",
        action="store_const",
        const=True,
        default=None,
        help="pause it: it does not run",
    )
    state.add_argument(
        "--enable", dest="disabled", action="store_const", const=False, help="run it again"
    )

    test = actions.add_parser(
        "test", help="run it once now and show what it answered; nothing is decided"
    )
    test.add_argument("hook_id", metavar="ID")
    test.add_argument(
        "--input",
        metavar="JSON",
        default=None,
        help="the JSON object it is sent (default: a sample of its event's)",
    )
    test.add_argument(
        "--session",
        metavar="ID",
        default="",
        help="a command hook runs in this session's workspace (default: an empty folder)",
    )
    for name, text in (("show", "one hook"), ("delete", "delete it: it runs no more")):
        action = actions.add_parser(name, help=text)
        action.add_argument("hook_id", metavar="ID")
    for action in actions.choices.values():
        # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="as JSON"
        )
        server_flags(action, default=argparse.SUPPRESS)
    parser.set_defaults(client_handler=handler)
