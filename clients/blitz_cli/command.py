"""The `blitz` command: its entry point, with the server's commands plugged in where installed.

blitz-client owns the `blitz` script (two distributions cannot both install it). `main()`
parses the command line and runs the chosen subcommand's handler. The client commands,
`chat`, `sessions`, `watch`, `usage`, `run`, `approve`, `deny`, `answer`, `rules`, `diff`,
`patch`, `push`, `files`, `cat`, `workflows`, `schedules`, `hooks` and `webhooks`
(`arguments.py`), are always there. Other distributions add theirs through the
`blitz.commands` entry-point group: each entry point is a function given the subparsers,
which adds its commands, each with a `handler(args, parser)` default returning the exit
code. blitz-server's is
`blitz.cli:add_commands` (`serve`, `config`, `token`), so `blitz serve` works wherever the
server is installed. Without it, each of those words prints one line saying so, exit 2.

This is the entry point, so it is where configuration is read: BLITZ_SERVER, BLITZ_TOKEN,
BLITZ_CA_FILE and BLITZ_LOG_LEVEL for the client commands, nowhere else. A plugged-in
handler reads its own settings once, when called from here (blitz.cli's read `Settings`).
Nothing here imports grpc: a plugin (the server's `blitz/__init__.py`) may need to set its
environment before grpc loads, and the client commands set grpc's log verbosity
(`grpc_verbosity`) before theirs import it.

Exit codes: 0 done, 1 failed to run (a port in use, a failed call or turn), 2 bad usage
or settings, 3 (`blitz run`, `blitz push`) an action was refused or a question left
unanswered, 130 interrupted before serving.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, MutableMapping, Sequence
from importlib import metadata

from blitz_cli.arguments import add_arguments, with_default_actions
from blitz_client import DEFAULT_URL

__all__ = ["ENTRY_POINT_GROUP", "build_parser", "grpc_verbosity", "main"]

ENTRY_POINT_GROUP = "blitz.commands"
"""The entry points that add commands to `blitz`: functions of the subparsers action."""

# The server's commands, named here so that without the server each still says what it is
# and how to get it, rather than being an unknown word.
_SERVER_COMMANDS = {
    "serve": "run the server",
    "config": "print the server's configuration",
    "token": "manage the server's bearer tokens",
}

Handler = Callable[[argparse.Namespace, argparse.ArgumentParser], int]
"""A subcommand's `handler` default: its arguments and its own parser; the exit code."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `blitz` command; returns the process's exit code."""
    parser = build_parser()
    # Known arguments only, so that a server command without the server, which takes any
    # arguments, can say so; every other command refuses the rest as parse_args does.
    argv = with_default_actions(sys.argv[1:] if argv is None else argv)
    args, unknown = parser.parse_known_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if unknown and handler is not _server_missing:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return handler(args, args.subparser)


def build_parser() -> argparse.ArgumentParser:
    """The `blitz` parser: the plugged-in commands first (the server's), then the client's."""
    parser = argparse.ArgumentParser(
        prog="blitz", description="Blitz: an agent session server and its clients."
    )
    parser.add_argument("--version", action="version", version=f"blitz {_version()}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP)):
        entry_point.load()(commands)
    for name, text in _SERVER_COMMANDS.items():
        if name not in commands.choices:
            missing = commands.add_parser(name, help=f"{text} (needs blitz-server)", add_help=False)
            missing.set_defaults(handler=_server_missing, subparser=missing)
    plugged_in = set(commands.choices)
    add_arguments(commands)
    for name, command in commands.choices.items():
        if name not in plugged_in:
            command.set_defaults(handler=_client, subparser=command)
    return parser


def grpc_verbosity(level: str, environ: MutableMapping[str, str]) -> None:
    """Set grpc-core's log verbosity in `environ` for a process logging at `level`: its own
    lines (a TLS handshake that failed, a port it could not bind, each with a C++ file
    name) only at "debug", none otherwise, since what they say reaches the user as the
    call's error or the server's own line. grpc reads it once, when it loads: this runs
    before anything imports grpc. A GRPC_VERBOSITY set by the user stands."""
    if "GRPC_VERBOSITY" not in environ:
        environ["GRPC_VERBOSITY"] = "DEBUG" if level == "debug" else "NONE"


def _server_missing(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    print(
        f"{parser.prog}: the server is not installed here; install blitz-server to use it",
        file=sys.stderr,
    )
    return 2


def _client(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """A client command, with the server address and token from flags or the environment."""
    server = args.server or os.environ.get("BLITZ_SERVER") or DEFAULT_URL
    token = args.token or os.environ.get("BLITZ_TOKEN") or None
    ca_file = args.ca_file or os.environ.get("BLITZ_CA_FILE") or None
    grpc_verbosity(args.log_level or os.environ.get("BLITZ_LOG_LEVEL") or "info", os.environ)
    try:
        code: int = args.client_handler(args, server=server, token=token, ca_file=ca_file)
    except ValueError as exc:  # what the client refuses before asking the server
        print(f"blitz: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`blitz watch --json | head`): quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


def _version() -> str:
    try:
        return metadata.version("blitz-client")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"
