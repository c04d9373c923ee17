"""The `blitz` command: the entry point, where settings are read and the loop is chosen.

`main()` parses the command line, reads `Settings` once from flags and `BLITZ_*`
variables, configures logging and runs the subcommand. It is the only place that reads
the environment or picks the event loop (uvloop where installed). Subcommands are
argparse subparsers, each with a handler; `chat`, `sessions`, `watch`, `usage` and `run`
are added beside `serve`.

The client commands (`blitz_cli`) talk to a server at `--server`, else `BLITZ_SERVER`,
else 127.0.0.1:50051, with `--token` or `BLITZ_TOKEN` as a bearer token.

Exit codes: 0 done, 1 failed to run (a port in use, a failed call or turn), 2 bad usage
or settings, 130 interrupted before serving.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from importlib import metadata
from typing import Any

import structlog

from blitz.config import SETTINGS, SettingsError, load_settings

__all__ = ["build_parser", "main"]

log = structlog.get_logger(__name__)

_Handler = Callable[[argparse.Namespace, argparse.ArgumentParser], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `blitz` command; returns the process's exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: _Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return handler(args, args.subparser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blitz", description="Blitz: an agent session server and its clients."
    )
    parser.add_argument("--version", action="version", version=f"blitz {_version()}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the server (gRPC and Connect/gRPC-Web ports)",
        description="Run the server until SIGTERM or Ctrl-C. Every flag can also be set by"
        " the BLITZ_* variable named in its help; the flag wins.",
    )
    for spec in SETTINGS:
        options: dict[str, Any] = {
            "dest": spec.name,
            "default": None,
            "help": f"{spec.help} [{spec.env}]",
        }
        if spec.choices:
            options["choices"] = spec.choices
        else:
            options["metavar"] = spec.metavar or None
        serve.add_argument(spec.flag, **options)
    serve.set_defaults(handler=_serve, subparser=serve)

    from blitz_cli import add_arguments

    add_arguments(commands)
    for command in commands.choices.values():
        if command is not serve:
            command.set_defaults(handler=_client, subparser=command)
    return parser


def _client(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """A client command, with the server address and token from flags or the environment."""
    from blitz_client import DEFAULT_URL

    server = args.server or os.environ.get("BLITZ_SERVER") or DEFAULT_URL
    token = args.token or os.environ.get("BLITZ_TOKEN") or None
    try:
        code: int = args.client_handler(args, server=server, token=token)
    except ValueError as exc:  # what the client refuses before asking the server
        print(f"blitz: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`blitz watch --json | head`): quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Imported here so that `blitz --version` and the client commands need not load the
    # server (grpc, uvicorn, the agent).
    from blitz.logs import configure_logging
    from blitz.server import serve

    try:
        settings = load_settings(vars(args), os.environ)
    except SettingsError as exc:
        parser.error(str(exc))  # exits with status 2
    configure_logging(log_format=settings.log_format, level=settings.log_level)
    try:
        _run(serve(settings))
    except OSError as exc:
        log.error("cannot start", error=str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        # A second signal cut the drain short.
        return 1
    return 0


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where installed (the Connect port is twice as fast on it)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is installed except on Windows
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def _version() -> str:
    try:
        return metadata.version("blitz-server")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


if __name__ == "__main__":
    sys.exit(main())
