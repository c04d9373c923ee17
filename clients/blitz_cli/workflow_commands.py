"""`blitz workflows list|show` (its flags: `workflow_arguments.py`): what `blitz run
--workflow NAME` can run, and one workflow's params and steps (docs/workflows.md). With
`--session` a session's (its workspace's and the server's), without one the server's own.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from google.protobuf import json_format
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from blitz.v1 import workflow_pb2
from blitz_cli.lines import accepted_line, error_line, known_workflows_line
from blitz_cli.tables import listing_console
from blitz_client import Blitz, BlitzError

__all__ = ["workflows_command"]


def workflows_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz workflows [list | show NAME] [--session ID] [--json]`."""
    try:
        with Blitz(server, token=token, ca_file=ca_file) as client:
            if args.action == "show":
                found = [client.workflow(args.session, args.name)]
            else:
                found = client.workflows(args.session)
    except BlitzError as exc:
        err = Console(stderr=True, highlight=False)
        err.print(error_line(exc.reason, exc.message, exc.metadata.get("field", "")))
        if known := known_workflows_line(exc.metadata):
            err.print(known)
        elif hint := accepted_line(exc.metadata):
            err.print(hint)
        return 1
    if args.json:
        for workflow in found:
            print(json.dumps(json_format.MessageToDict(workflow), ensure_ascii=False))
        return 0
    if args.action == "show":
        _print_one(Console(highlight=False), found[0])
        return 0
    if not found:
        where = "this session" if args.session else "the server (--workflows-dir)"
        Console(stderr=True, highlight=False).print(f"[dim]no workflows in {where}[/]")
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("name", "version", "params", "from", "title"):
        table.add_column(column)
    for workflow in found:
        broken = workflow.HasField("error")
        title = f"[red]broken: {escape(workflow.error.message)}[/]" if broken else ""
        title = title or escape(workflow.title)
        table.add_row(
            escape(workflow.name),
            escape(workflow.version),
            escape(" ".join(_param_words(workflow.params))),
            workflow.source,
            title,
        )
    listing_console().print(table)
    return 0


def _param_words(params: Sequence[workflow_pb2.WorkflowParam]) -> list[str]:
    return [p.name + ("" if p.required else "?") for p in params]


def _print_one(console: Console, workflow: workflow_pb2.Workflow) -> None:
    version = f" {workflow.version}" if workflow.version else ""
    console.print(f"[bold]{escape(workflow.name)}[/]{escape(version)} · {workflow.source}"
                  f" · {escape(workflow.path)}")  # fmt: skip
    if workflow.title:
        console.print(f"  {escape(workflow.title)}")
    if workflow.description:
        console.print(f"  [dim]{escape(workflow.description)}[/]")
    if workflow.params:
        console.print("params:")
        for param in workflow.params:
            need = "required" if param.required else "optional"
            if param.has_default:
                need += f", default {param.default!r}"
            if param.values:
                need += f", one of {', '.join(param.values)}"
            about = f" — {param.description}" if param.description else ""
            kind = param.type or "string"
            console.print(
                f"  -p {escape(param.name)}=…  [dim]{kind} ({escape(need)}){escape(about)}[/]"
            )
    console.print("steps:")
    for number, step in enumerate(workflow.steps, 1):
        title = f" — {step.title}" if step.title else ""
        console.print(f"  {number}. {escape(step.id)} [dim]({escape(step.type)}){escape(title)}[/]")
    name = workflow.name
    console.print(f"[dim]run it: blitz run --workflow {escape(name)} -p KEY=VALUE …[/]")
