"""`blitz webhooks`: make, list, test, inspect and delete webhooks, for people and scripts.

`create` prints the new webhook's id and its signing secret, which the server shows only
then; `test` sends a ping and prints what the receiver answered; `deliveries` lists a
webhook's deliveries, newest first, with their attempts. `pause`, `resume` and `rotate`
do what UpdateWebhook and RotateWebhookSecret do. With `--json`, each prints protobuf's
JSON mapping (one object per line for lists). Exit codes as the other commands': 0 done,
1 a failed call (or a ping that was not delivered), 2 bad usage.
"""

from __future__ import annotations

import argparse
from itertools import islice

from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from blitz.v1 import webhooks_pb2 as wh
from blitz_cli.lines import error_line
from blitz_cli.tables import listing_console
from blitz_client import Blitz, BlitzError

__all__ = ["webhooks_command"]

_STATES = {
    wh.WEBHOOK_STATE_ACTIVE: "active",
    wh.WEBHOOK_STATE_PAUSED: "paused",
    wh.WEBHOOK_STATE_FAILING: "failing",
    wh.WEBHOOK_STATE_GONE: "gone",
}
_DELIVERY_STATES = {
    wh.DELIVERY_STATE_PENDING: "pending",
    wh.DELIVERY_STATE_DELIVERED: "delivered",
    wh.DELIVERY_STATE_FAILED: "failed",
}


def _json(message: Message) -> str:
    return json_format.MessageToJson(message, indent=None)


def _labels(pairs: list[str] | None) -> dict[str, str]:
    found = {}
    for pair in pairs or []:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise ValueError(f"--label takes KEY=VALUE, got {pair!r}")
        found[key] = value
    return found


def webhooks_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz webhooks ACTION …`."""
    console = Console(highlight=False)
    action = args.action or "list"
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            return _ACTIONS[action](client, args, console)
    except BlitzError as exc:
        Console(stderr=True, highlight=False).print(error_line(exc.reason, exc.message))
        return 1


def _list(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    found = client.webhooks()
    if args.json:
        for hook in found:
            print(_json(hook))
        return 0
    table = Table("id", "url", "events", "state", "failures", "description")
    table.columns[0].no_wrap = True
    for hook in found:
        state = _STATES.get(hook.state, "?")
        table.add_row(
            hook.id,
            escape(hook.url),
            ", ".join(hook.events),
            state + (f" ({escape(hook.state_reason)})" if hook.state_reason else ""),
            str(hook.failures),
            escape(hook.description),
        )
    listing_console().print(table)  # piped: as wide as its cells, not 80 columns
    return 0


def _create(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    events = [e.strip() for e in args.events.split(",") if e.strip()]
    made = client.create_webhook(
        args.url,
        events,
        labels=_labels(args.label),
        session_id=args.session or "",
        description=args.description,
        format="slack" if args.slack else "standard",
        server_wide=args.server_wide,
    )
    if args.json:
        print(_json(made))
        return 0
    console.print(f"webhook [bold]{made.webhook.id}[/] → {escape(made.webhook.url)}")
    console.print(f"  events {', '.join(made.webhook.events)}")
    console.print(f"  secret [bold]{made.secret}[/]  (shown once: keep it to verify signatures)")
    return 0


def _test(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    delivery = client.test_webhook(args.webhook_id)
    if args.json:
        print(_json(delivery))
    else:
        _print_delivery(console, delivery)
    return 0 if delivery.state == wh.DELIVERY_STATE_DELIVERED else 1


def _deliveries(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    with client.deliveries(args.webhook_id) as listed:
        found = list(islice(listed, args.limit))
    if args.json:
        for delivery in found:
            print(_json(delivery))
        return 0
    for delivery in found:
        _print_delivery(console, delivery)
    return 0


def _print_delivery(console: Console, delivery: wh.Delivery) -> None:
    where = f" session {delivery.session_id} seq {delivery.seq}" if delivery.session_id else ""
    state = _DELIVERY_STATES.get(delivery.state, "?")
    console.print(f"[bold]{delivery.id}[/] {delivery.type}{where} · {state}")
    for attempt in delivery.attempts:
        status = str(attempt.status) if attempt.status else "no answer"
        when = attempt.time.ToDatetime().strftime("%Y-%m-%d %H:%M:%S")
        shown = escape(attempt.error or attempt.response[:80].replace("\n", " "))
        console.print(
            f"  #{attempt.number} {when} {status} in {attempt.latency.ToMilliseconds()} ms  {shown}"
        )


def _delete(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    client.delete_webhook(args.webhook_id)
    console.print(f"deleted {args.webhook_id}")
    return 0


def _pause(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    hook = client.update_webhook(args.webhook_id, paused=args.action == "pause")
    console.print(f"{hook.id} {_STATES.get(hook.state, '?')}")
    return 0


def _rotate(client: Blitz, args: argparse.Namespace, console: Console) -> int:
    rotated = client.rotate_webhook_secret(args.webhook_id, overlap=args.overlap)
    if args.json:
        print(_json(rotated))
        return 0
    console.print(f"secret [bold]{rotated.secret}[/]  (shown once)")
    if rotated.webhook.HasField("previous_secret_expire_time"):
        until = rotated.webhook.previous_secret_expire_time.ToDatetime()
        console.print(f"  the previous secret signs beside it until {until:%Y-%m-%d %H:%M} UTC")
    return 0


_ACTIONS = {
    "list": _list,
    "create": _create,
    "test": _test,
    "deliveries": _deliveries,
    "delete": _delete,
    "pause": _pause,
    "resume": _pause,
    "rotate": _rotate,
}
