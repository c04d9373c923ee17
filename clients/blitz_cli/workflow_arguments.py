"""The flags of `blitz workflows` (the command: `workflow_commands.py`, imported only when
it runs, as every command's)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["add_workflows"]


def add_workflows(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    server_flags: Callable[..., None],
    handler: object,
) -> None:
    """The `workflows` command and its two actions; `handler` runs it."""
    parser = commands.add_parser(
        "workflows",
        help="the workflows `blitz run --workflow` can run",
        description="List the workflows a session can run (its workspace's"
        " .blitz/workflows/ and the server's --workflows-dir), or show one's params and"
        " steps. Without --session: the server's own.",
    )
    server_flags(parser)
    parser.add_argument("--json", action="store_true", help="protobuf's JSON, a line each")
    parser.add_argument("--session", metavar="ID", default="", help="as this session sees them")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="by name (the default)")
    show = actions.add_parser("show", help="one workflow: its params and steps")
    show.add_argument("name", metavar="NAME")
    for action in (listing, show):
        # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        action.add_argument("--session", metavar="ID", default=argparse.SUPPRESS)
        server_flags(action, default=argparse.SUPPRESS)
    parser.set_defaults(client_handler=handler)
