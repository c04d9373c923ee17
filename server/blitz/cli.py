"""The `blitz` command's server side, `serve`, `config` and `token`: where settings are read
and the loop is chosen.

The `blitz` script is blitz-client's (`blitz_cli.command`); this distribution plugs its
commands into it with the `blitz.commands` entry point, `add_commands`. Each handler reads
`Settings` once, from flags and `BLITZ_*` variables, configures logging and runs its
command; they are the only place that reads the server's environment or picks the event
loop (uvloop where installed). `main` is the whole command (`python -m blitz.cli`).

Exit codes: 0 done, 1 failed to run (a port in use, a failed call or turn), 2 bad usage
or settings, 130 interrupted before serving.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
from collections.abc import Coroutine, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from blitz.config import Settings
    from blitz.process import Handed
    from blitz.server import CannotListen
    from blitz.workers import Workers

from blitz.config import CONFIG_ENV, SETTINGS, SettingsError, effective_toml, resolve, values
from blitz_cli.command import grpc_verbosity, main

__all__ = ["add_commands", "main"]

log = structlog.get_logger(__name__)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add serve, config and token to the `blitz` command's subparsers (the entry point)."""
    serve = commands.add_parser(
        "serve",
        help="run the server (gRPC and Connect/gRPC-Web ports)",
        description="Run the server until SIGTERM or Ctrl-C. Every flag can also be set by"
        " the BLITZ_* variable named in its help, or in the TOML file of --config; a flag"
        " wins over a variable, which wins over the file.",
    )
    _settings_arguments(serve)
    serve.set_defaults(handler=_serve, subparser=serve)
    config = commands.add_parser(
        "config",
        help="print the effective configuration, secrets masked",
        description="Print every setting as `blitz serve` would use it with these flags,"
        " variables and file, with where each value came from. The output is TOML that"
        " --config reads back (once the masked secrets are filled in).",
    )
    _settings_arguments(config)
    config.set_defaults(handler=_config, subparser=config)
    _token_commands(commands)


def _settings_arguments(
    parser: argparse.ArgumentParser, *, only: tuple[str, ...] | None = None
) -> None:
    """A flag for every setting (or those named in `only`), and --config for the file."""
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"TOML file of settings by name (grpc_port = 50051) [{CONFIG_ENV}]",
    )
    for spec in SETTINGS:
        if only is not None and spec.name not in only:
            continue
        options: dict[str, Any] = {
            "dest": spec.name,
            "default": None,
            "help": f"{spec.help} [{spec.env}]".replace("%", "%%"),
        }
        if spec.choices:
            options["choices"] = spec.choices
        else:
            options["metavar"] = spec.metavar or None
        if spec.repeatable:
            options["action"] = "append"
        if spec.parse is values.bool_:
            # `--insecure` alone says true; `--insecure false` is still understood.
            options.update(nargs="?", const="true")
        parser.add_argument(spec.flag, **options)


def _token_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from blitz.tokens_cli import add_token_commands

    add_token_commands(commands, settings_arguments=_settings_arguments, handler=_token)


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Imported here so that `blitz --version` and the client commands need not load the
    # server (grpc, uvicorn, the agent). The imports make some 150,000 objects that live
    # as long as the process. The collector walked them again and again while they were
    # made (a sixth of the start), and once more after (0.3 s: a first collection of them
    # all, in each generation). So it is off while they are made, and they are frozen as
    # they are, out of its reach, the little garbage of the imports with them.
    # settle_heap freezes what the server's start adds. The settings are read first (and
    # the secrets handed over, which may re-execute this process), without grpc: it reads
    # its log verbosity from the environment when it loads.
    from blitz.process import hand_over_secrets

    handed = hand_over_secrets(
        sys.orig_argv[1:],
        os.environ,
        flags={spec.flag: spec.name for spec in SETTINGS if spec.secret},
        variables=[v for spec in SETTINGS if spec.secret for v in (spec.env, *spec.fallback_env)],
    )
    for name, text in handed.flags.items():
        setattr(args, name, text)
    settings = _settings(args, parser, environ={**os.environ, **handed.environ})
    grpc_verbosity(settings.log_level, os.environ)
    # Which of `--workers` this is, and where their metrics meet: before prometheus-client
    # is imported, which reads it then (blitz/workers.py).
    from blitz.workers import prepare_process

    worker = prepare_process(settings.workers, os.environ)
    gc.disable()
    try:
        from blitz.auth import ServeRefused
        from blitz.logs import configure_logging
        from blitz.server import CannotListen, serve
    finally:
        gc.freeze()
        gc.enable()

    configure_logging(log_format=settings.log_format, level=settings.log_level, worker=worker)
    try:
        settings, workers = _workers(settings, handed)
        _run(serve(settings, workers=workers))
        if workers is not None and workers.given_up:
            return 1  # a worker kept dying: said in its log line
    except ServeRefused as exc:
        log.error("refusing to start", reason=str(exc))
        return 2
    except CannotListen as exc:
        log.error("cannot start", error=f"{exc}; {_listen_hint(exc)}")
        return 1
    except OSError as exc:
        log.error("cannot start", error=str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        # A second signal cut the drain short.
        return 1
    return 0


def _listen_hint(exc: CannotListen) -> str:
    """What to change when a port could not be bound: its flags, named as given."""
    flag = {spec.name: spec.flag for spec in SETTINGS}
    port, host = flag[exc.port_setting], flag[exc.host_setting]
    if exc.in_use:
        return (
            f"another process listens there (another `blitz serve`?): choose another port"
            f" with {port}"
        )
    return f"the address is set by {host} and {port}"


def _workers(settings: Settings, handed: Handed) -> tuple[Settings, Workers | None]:
    """This process as one of `--workers` (blitz/workers.py): the settings it serves with,
    and the workers it started (None: it is one of them, or the only one)."""
    from blitz.auth import ServeRefused
    from blitz.workers import Workers, become_worker, reserve_port

    if become_worker(os.environ):
        return replace(settings, metrics_port=None), None
    if settings.workers == 1:
        return settings, None
    if not settings.database.startswith(("postgresql://", "postgres://")):
        raise ServeRefused(
            f"--workers {settings.workers} needs a store several processes share"
            " (--database postgresql://…): a SQLite file has one writer, the process that"
            " owns it; run one process (docs/operations.md, Workers)"
        )
    grpc_port, grpc_held = reserve_port(settings.grpc_host, settings.grpc_port)
    http_port, http_held = reserve_port(settings.http_host, settings.http_port)
    settings = replace(settings, grpc_port=grpc_port, http_port=http_port)
    argv = [*sys.orig_argv[1:], f"--grpc-port={grpc_port}", f"--http-port={http_port}"]
    workers = Workers(settings.workers, argv, handed, held=[grpc_held, http_held])
    workers.start()
    return settings, workers


def _settings(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    *,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    try:
        return resolve(
            vars(args), os.environ if environ is None else environ, config=args.config
        ).settings
    except SettingsError as exc:
        parser.error(str(exc))  # exits with status 2


def _config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        resolved = resolve(vars(args), os.environ, config=args.config)
    except SettingsError as exc:
        parser.error(str(exc))
    sys.stdout.write(effective_toml(resolved))
    return 0


def _token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from blitz.tokens_cli import run_token_command

    return run_token_command(args, _settings(args, parser))


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where installed (the Connect port is twice as fast on it)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is installed except on Windows
        asyncio.run(coro)
    else:
        uvloop.run(coro)


if __name__ == "__main__":
    sys.exit(main())
