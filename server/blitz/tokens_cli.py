"""`blitz token create|list|revoke`: the bearer tokens of a server's store, managed offline.

They work on the database the server uses (the same `--data-dir`, `--database` and
`--config` as `blitz serve`), with or without the server running. `create` prints the new
token once — the store keeps only its hash. A server decides at start whether tokens are
required, so the first token takes effect when the server starts next; later ones, and
revocations, within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from blitz.auth.tokens import check_name, new_token, token_hash
from blitz.config import Settings
from blitz.store import TokenRecord, open_store

__all__ = ["add_token_commands", "run_token_command"]

_Handler = Callable[[argparse.Namespace, argparse.ArgumentParser], int]


def add_token_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    settings_arguments: Callable[..., None],
    handler: _Handler,
) -> None:
    token = commands.add_parser(
        "token",
        help="create, list and revoke the server's bearer tokens",
        description="Manage the bearer tokens in the server's database. Each token stands for"
        " a principal (its NAME): a principal sees only its own sessions, an admin sees all.",
    )
    actions = token.add_subparsers(title="actions", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="make a token and print it, once")
    create.add_argument("name", metavar="NAME", help="the principal the token stands for")
    create.add_argument("--admin", action="store_true", help="the principal sees every session")
    actions.add_parser("list", help="every token: id, name, admin, created, revoked")
    revoke = actions.add_parser("revoke", help="revoke a token by id, or every token of a name")
    revoke.add_argument("target", metavar="ID_OR_NAME")
    for action in actions.choices.values():
        settings_arguments(action, only=("data_dir", "database"))
        action.set_defaults(handler=handler, subparser=action, token_action=action.prog.split()[-1])


def run_token_command(args: argparse.Namespace, settings: Settings) -> int:
    """Carry out `blitz token ACTION`; the process's exit code."""
    try:
        return asyncio.run(_run(args, settings))
    except ValueError as exc:
        print(f"blitz token: {exc}", file=sys.stderr)
        return 2


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings.database) as store:
        if args.token_action == "create":
            token = new_token()
            await store.add_token(
                TokenRecord(
                    id="tok_" + uuid.uuid4().hex[:12],
                    name=check_name(args.name),
                    hash=token_hash(token),
                    admin=args.admin,
                    create_time=time.time(),
                )
            )
            print(token)
            print(
                "blitz token: a server on this database that took calls without a token"
                " requires one from within seconds of this; give this one as"
                " `authorization: Bearer TOKEN` (BLITZ_TOKEN for the blitz command)",
                file=sys.stderr,
            )
            return 0
        if args.token_action == "list":
            print(f"{'id':<17} {'name':<24} {'admin':<6} {'created':<21} revoked")
            for rec in await store.list_tokens():
                created = _when(rec.create_time)
                revoked = _when(rec.revoke_time) if rec.revoke_time else "-"
                admin = "yes" if rec.admin else "no"
                print(f"{rec.id:<17} {rec.name:<24} {admin:<6} {created:<21} {revoked}")
            return 0
        count = await store.revoke_tokens(args.target, now=time.time())
        if not count:
            print(f"blitz token: no live token has the id or name {args.target!r}", file=sys.stderr)
            return 1
        print(f"revoked {count} token{'s' if count > 1 else ''}")
        return 0


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
