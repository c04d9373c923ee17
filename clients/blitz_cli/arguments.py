"""The client subcommands' command lines: `chat`, `sessions`, `watch`, `usage`, `run`,
`approve`, `deny`, `answer`, `rules`, `diff`, `patch`, `push`, `files`, `cat`,
`workflows` (its flags in `workflow_arguments.py`), `schedules` (in
`schedule_arguments.py`), `hooks` (in `hook_arguments.py`) and `webhooks`.

`add_arguments` adds each to the `blitz` command's subparsers with its flags, its help and
its handler (`client_handler`, from `chat`, `control`, `scriptable`, `repos`,
`workflow_commands`, `schedule_commands`, `hook_commands` or `webhooks`). Flag values are
checked here, so that a bad one is a usage error (exit 2), never a traceback. A handler's
module is imported when its command runs: the terminal interface (its rendering,
Markdown's parser) is no part of `blitz serve`'s start, nor of another command's.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from blitz_cli.hook_arguments import add_hooks
from blitz_cli.schedule_arguments import add_schedules
from blitz_cli.workflow_arguments import add_workflows
from blitz_client import DEFAULT_URL

__all__ = ["add_arguments", "with_default_actions"]

_YEAR_S = 365 * 24 * 3600.0


@dataclass(frozen=True)
class _Handler:
    """A client command's handler: `name` in `blitz_cli.<module>`, imported when called."""

    module: str
    name: str

    def resolve(self) -> Callable[..., int]:
        command: Callable[..., int] = getattr(
            importlib.import_module(f"blitz_cli.{self.module}"), self.name
        )
        return command

    def __call__(
        self,
        args: argparse.Namespace,
        *,
        server: str,
        token: str | None,
        ca_file: str | None = None,
    ) -> int:
        return self.resolve()(args, server=server, token=token, ca_file=ca_file)


def _seconds(text: str) -> float:
    """A number of seconds, as a flag: finite, not negative, at most a year."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= _YEAR_S:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and {_YEAR_S:.0f} seconds")
    return value


def _bounded(limit: int) -> Callable[[str], int]:
    """A whole number from 0 to `limit`, as a flag."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not 0 <= value <= limit:
            raise argparse.ArgumentTypeError(f"{text} is not between 0 and {limit}")
        return value

    return parse


class _ApproveScope(argparse.Action):
    """`blitz run --approve [SCOPE]`: a word that is no scope is the prompt, not a usage
    error, so that `blitz run --approve '$ make'` runs `$ make` approved once. It is kept
    in `approve_prompt` (PROMPT's default would overwrite it there); `run_command` makes it
    the prompt."""

    SCOPES = ("once", "session", "always")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, str) and values not in self.SCOPES:
            namespace.approve_prompt = values
            values = "once"
        setattr(namespace, self.dest, values)


_SERVER_FLAGS = ("--server", "--token", "--ca-file", "--log-level")  # flags with a value
_DEFAULT_ACTIONS = {"rules": ("list", ("list", "revoke"))}
"""A command whose ACTION may be left out: the action meant, and every action there is."""


def with_default_actions(argv: Sequence[str]) -> list[str]:
    """`argv` with the default action put in where it was left out: `blitz rules SESSION`
    is `blitz rules list SESSION`, as `blitz sessions` is `blitz sessions list`. (argparse
    refuses a word that is no ACTION before any action could take it.)"""
    args = list(argv)
    if not args or args[0] not in _DEFAULT_ACTIONS:
        return args
    default, actions = _DEFAULT_ACTIONS[args[0]]
    index = 1
    while index < len(args):
        word = args[index]
        if word == "--":
            return args
        if not word.startswith("-"):
            if word not in actions:
                args.insert(index, default)
            return args
        # A valued flag (or a prefix argparse expands to one) takes the next word.
        takes_value = "=" not in word and any(f.startswith(word) for f in _SERVER_FLAGS)
        index += 2 if takes_value and word.startswith("--") else 1
    return args


def _workspace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        metavar="NAME",
        default="",
        help="a new session in this named workspace folder, shared with your other sessions"
        " in it (default: a folder of its own)",
    )


def _repository_flags(parser: argparse.ArgumentParser) -> None:
    """A new session cloned from a repository: `--repo URL[@REF]`, `--depth`, `--submodules`."""
    parser.add_argument(
        "--repo",
        metavar="URL[@REF]",
        default="",
        help="a new session cloned from this git repository (one the server allows), at"
        " REF: a branch, tag or commit (default: its default branch)",
    )
    parser.add_argument(
        "--depth",
        type=_bounded(2**31 - 1),
        default=0,
        metavar="N",
        help="with --repo: only the latest N commits of history",
    )
    parser.add_argument(
        "--submodules", action="store_true", help="with --repo: clone its submodules too"
    )


def add_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the client commands (chat, sessions, watch, usage, run, approve, deny, answer,
    rules, diff, patch, push, files, cat, workflows, schedules, hooks and webhooks) to the
    `blitz` command's subparsers."""

    def server_flags(parser: argparse.ArgumentParser, default: object = None) -> None:
        parser.add_argument(
            "--server",
            metavar="URL",
            default=default,
            help="host:port (gRPC) or http://host:port (Connect); several replicas'"
            " separated by commas, all of one kind [BLITZ_SERVER;"
            f" default {DEFAULT_URL}]",
        )
        parser.add_argument(
            "--token", default=default, help="bearer token sent on every call [BLITZ_TOKEN]"
        )
        parser.add_argument(
            "--ca-file",
            metavar="PATH",
            default=default,
            help="PEM file of the authorities a TLS server's certificate must chain to"
            " [BLITZ_CA_FILE; default: the system's]",
        )
        parser.add_argument(
            "--log-level",
            choices=("debug", "info", "warning", "error"),
            default=default,
            help="debug shows grpc's own log lines too [BLITZ_LOG_LEVEL; default info]",
        )

    chat_parser = commands.add_parser(
        "chat",
        help="talk to an agent in the terminal",
        description="A terminal chat with one session: streaming text, tool calls, one-key"
        " approvals (o once, s session, a always, r the suggested rule, d deny, x deny and"
        " stop the turn, e edit, p park: leave with the turn waiting), questions and forms,"
        " the task list and a usage footer after each turn. /help lists the commands."
        " Ctrl-C cancels a turn; twice leaves.",
    )
    server_flags(chat_parser)
    chat_parser.add_argument("--session", metavar="ID", help="reattach to this session")
    chat_parser.add_argument(
        "--pick", action="store_true", help="choose the session to reattach to from a list"
    )
    chat_parser.add_argument(
        "--per-call-usage",
        action="store_true",
        help="each model call's tokens under a turn (/usage shows them any time)",
    )
    chat_parser.add_argument("--model", default="", help="model of a new session")
    chat_parser.add_argument(
        "--agent",
        metavar="NAME",
        default="",
        help="agent of a new session: blitz (built in) or an ACP agent the server declares",
    )
    chat_parser.add_argument("--title", default="", help="title of a new session")
    _workspace_flag(chat_parser)
    _repository_flags(chat_parser)
    chat_parser.add_argument(
        "--while-busy",
        choices=("queue", "steer"),
        default="queue",
        help="what a line typed while a turn runs does: queue the next turn (the default)"
        " or steer the running one (/busy changes it)",
    )
    chat_parser.add_argument("--plan", action="store_true", help="plan mode for every turn")
    chat_parser.add_argument(
        "--read-only", metavar="REASON", default="", help="refuse every change, giving REASON"
    )
    chat_parser.set_defaults(client_handler=_Handler("chat", "chat_command"))

    sessions = commands.add_parser("sessions", help="list, show, close, fork or delete sessions")
    server_flags(sessions)
    sessions.add_argument("--json", action="store_true", help="JSON, one session per line")
    states = ["idle", "running", "parked", "closed"]
    sessions.add_argument("--state", choices=states, help="only in this state")
    actions = sessions.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="the sessions, newest first (the default)")
    # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
    listing.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="one session per line"
    )
    listing.add_argument(
        "--state", choices=states, default=argparse.SUPPRESS, help="only in this state"
    )
    server_flags(listing, default=argparse.SUPPRESS)
    for name, text in (
        ("show", "one session and its open requests"),
        ("close", "close one"),
        ("delete", "delete one, with its records (and its own workspace folder)"),
        ("fork", "a new session from the history as TURN left it, with that turn's files"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("session_id", metavar="ID")
        if name == "fork":
            action.add_argument(
                "turn_id",
                metavar="TURN",
                nargs="?",
                default="",
                help="its id or number, 1 the first (default: the last finished turn)",
            )
            action.add_argument("--title", default="", help="the fork's title")
        # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="the session as JSON"
        )
        server_flags(action, default=argparse.SUPPRESS)
    sessions.set_defaults(client_handler=_Handler("scriptable", "sessions_command"))

    watch = commands.add_parser("watch", help="show a session's events, live")
    server_flags(watch)
    watch.add_argument("session_id", metavar="ID")
    watch.add_argument(
        "--after", type=_bounded(2**63 - 1), default=0, metavar="N", help="start after seq N"
    )
    watch.add_argument(
        "--no-follow", dest="follow", action="store_false", help="stop after the replay"
    )
    watch.add_argument("--json", action="store_true", help="events as JSON lines")
    watch.set_defaults(client_handler=_Handler("scriptable", "watch_command"))

    usage = commands.add_parser(
        "usage",
        help="a session's model calls, tokens and cost (or every session's, --all)",
    )
    server_flags(usage)
    usage.add_argument("session_id", metavar="ID", nargs="?", default="")
    usage.add_argument("--json", action="store_true", help="the UsageReport as JSON")
    usage.add_argument(
        "--all", action="store_true", help="every session you can see (an admin: everyone's)"
    )
    usage.add_argument(
        "--by",
        choices=["model", "day", "session", "principal"],
        help="with --all: sum by this (model); principal: by whose sessions (an admin sees all)",
    )
    usage.set_defaults(client_handler=_Handler("scriptable", "usage_command"))

    run = commands.add_parser(
        "run",
        help="run one turn, for scripts",
        description="Run one turn and print its output (or, with --json, every event as a"
        " JSON line). Approvals are refused unless --approve is given; questions are"
        " refused (the turn is cancelled) unless --answer is. Exit code 0 when the turn"
        " succeeds, 1 when it fails, 2 on bad usage, 3 when an action was refused (not"
        " approved, denied by a rule, timed out) or a question left unanswered, unless"
        " --allow-refused is given.",
    )
    server_flags(run)
    run.add_argument("prompt", nargs="?", default="")
    run.set_defaults(approve_prompt="")
    run.add_argument(
        "--workflow",
        metavar="NAME",
        default="",
        help="run the workflow NAME (docs/workflows.md) instead of a prompt",
    )
    run.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a param of --workflow (repeat for several)",
    )
    run.add_argument("--session", metavar="ID", help="run in this session (default: a new one)")
    run.add_argument("--model", default="", help="model of a new session")
    run.add_argument("--title", default="", help="title of a new session (default: the prompt's)")
    _workspace_flag(run)
    run.add_argument(
        "--agent",
        metavar="NAME",
        default="",
        help="agent of a new session: blitz (built in) or an ACP agent the server declares",
    )
    _repository_flags(run)
    run.add_argument("--json", action="store_true", help="every event as a JSON line")
    decisions = run.add_mutually_exclusive_group()
    decisions.add_argument(
        "--approve",
        nargs="?",
        const="once",
        action=_ApproveScope,
        metavar="SCOPE",
        help="approve every request (once unless given session or always; another word"
        " after it is the PROMPT)",
    )
    decisions.add_argument(
        "--deny", dest="deny_reason", metavar="REASON", help="deny every request, giving REASON"
    )
    run.add_argument(
        "--answer",
        action="append",
        metavar="TEXT",
        help="answer questions with TEXT (an option or its number; repeat for several)",
    )
    run.add_argument(
        "--allow-refused",
        action="store_true",
        help="exit 0 even when an action was refused or a question left unanswered (a"
        " refused question still fails the turn: exit 1)",
    )
    run.add_argument("--command", action="store_true", help="PROMPT is a /command")
    run.add_argument("--plan", action="store_true", help="plan mode")
    run.add_argument("--read-only", metavar="REASON", default="", help="refuse every change")
    run.add_argument(
        "--max-turns", type=_bounded(2**31 - 1), default=0, metavar="N", help="model-call limit"
    )
    run.add_argument("--timeout", type=_seconds, default=0, metavar="S", help="turn deadline")
    run.set_defaults(client_handler=_Handler("scriptable", "run_command"))

    for name, text in (
        ("approve", "approve an open approval request"),
        ("deny", "deny an open approval request"),
    ):
        decide = commands.add_parser(name, help=text)
        server_flags(decide)
        decide.add_argument("session_id", metavar="SESSION")
        decide.add_argument("request_id", metavar="REQUEST")
        decide.add_argument("--json", action="store_true", help="the decision as JSON")
        decide.set_defaults(
            client_handler=_Handler("control", "decide_command"), deny=name == "deny"
        )
        if name == "approve":
            decide.add_argument(
                "--scope",
                choices=["once", "session", "always"],
                default="once",
                help="once (the default), or a rule for the session or always",
            )
            decide.add_argument(
                "--suggested",
                action="store_true",
                help="make the request's suggested rule (always, unless --scope session)",
            )
        else:
            decide.add_argument("--reason", default="", help="given to the model")
            decide.add_argument("--stop", action="store_true", help="also stop the turn")

    answer = commands.add_parser("answer", help="answer an open question")
    server_flags(answer)
    answer.add_argument("session_id", metavar="SESSION")
    answer.add_argument("request_id", metavar="REQUEST")
    answer.add_argument("answers", nargs="*", metavar="TEXT", help="the answer(s)")
    answer.add_argument("--values", metavar="JSON", help="a form's values, as a JSON object")
    answer.add_argument("--decline", action="store_true", help="decline a form")
    answer.add_argument("--json", action="store_true", help="the result as JSON")
    answer.set_defaults(client_handler=_Handler("control", "answer_command"))

    rules = commands.add_parser(
        "rules",
        help="list or revoke a session's approval rules",
        description="`blitz rules SESSION` is `blitz rules list SESSION`.",
    )
    server_flags(rules)
    rules.add_argument("--json", action="store_true", help="JSON, one rule per line")
    rule_actions = rules.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = rule_actions.add_parser("list", help="the rules that apply in SESSION")
    listing.add_argument("session_id", metavar="SESSION")
    revoke = rule_actions.add_parser("revoke", help="remove one")
    revoke.add_argument("session_id", metavar="SESSION")
    revoke.add_argument("rule_id", metavar="RULE")
    for action in (listing, revoke):
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="as JSON"
        )
        server_flags(action, default=argparse.SUPPRESS)
    rules.set_defaults(client_handler=_Handler("control", "rules_command"))

    diff = commands.add_parser(
        "diff",
        help="what changed in a session, as a unified diff",
        description="What changed in a session: one cloned from a repository, git's diff of"
        " its starting commit against its workspace now; another, what the agent's file"
        " tools changed. Printed as it is when piped (for `git apply`), coloured on a"
        " terminal.",
    )
    server_flags(diff)
    diff.add_argument("session_id", metavar="SESSION")
    diff.add_argument(
        "--turn", metavar="TURN", default="", help="only this finished turn's (its id or number)"
    )
    diff.add_argument("--json", action="store_true", help="the GetDiffResponse as JSON")
    diff.set_defaults(client_handler=_Handler("control", "diff_command"))

    patch = commands.add_parser(
        "patch",
        help="a session's changes to its repository as patches, a diff or a bundle",
        description="Hand back the changes of a session cloned from a repository: a `git"
        " format-patch` series (one commit per turn that changed files; `git am` applies"
        " it), one diff (`git apply`), or a `git bundle` of a branch (`git fetch` from it)."
        " Written to FILE, or to stdout (a bundle only when piped); the number of commits"
        " and the commit they apply to go to stderr.",
    )
    server_flags(patch)
    patch.add_argument("session_id", metavar="SESSION")
    patch.add_argument(
        "--format",
        choices=["patch", "diff", "bundle"],
        default="patch",
        help="patch: one commit per turn, for `git am` (the default); diff: for `git apply`;"
        " bundle: a branch to `git fetch`",
    )
    patch.add_argument("-o", "--output", metavar="FILE", default="", help="write it here")
    patch.add_argument(
        "--squash", action="store_true", help="one commit for all the changes, not one per turn"
    )
    patch.add_argument(
        "-m", "--message", metavar="MSG", default="", help="the one commit's message (squashes)"
    )
    patch.add_argument(
        "--branch",
        metavar="B",
        default="",
        help="the bundle's branch (default: blitz/ and the session id)",
    )
    patch.set_defaults(client_handler=_Handler("repos", "patch_command"))

    push = commands.add_parser(
        "push",
        help="push a session's changes to its repository as a new branch, once approved",
        description="Commit the changes of a session cloned from a repository and push"
        " them to its origin as a new branch. The push waits for a person's approval"
        " (`blitz approve SESSION REQUEST`, printed here, or any client of the session);"
        " this command follows it until it lands. Exit code 0 when pushed, 1 when the"
        " push failed (PUSH_REJECTED: the branch exists and has moved; NO_CHANGES), 3 when"
        " it was denied (PUSH_DENIED).",
    )
    server_flags(push)
    push.add_argument("session_id", metavar="SESSION")
    push.add_argument(
        "--branch",
        metavar="B",
        default="",
        help="the new branch (default: blitz/ and the session id's first 12 digits)",
    )
    push.add_argument(
        "-m",
        "--message",
        metavar="MSG",
        default="",
        help="one commit with this message (default: one per turn, as Blitz made them)",
    )
    push.add_argument(
        "--no-wait",
        dest="wait",
        action="store_false",
        help="leave once the push waits for approval (exit 0); `blitz watch` shows the rest",
    )
    push.add_argument("--json", action="store_true", help="the reply and the turn's events as JSON")
    push.set_defaults(client_handler=_Handler("repos", "push_command"))

    files = commands.add_parser("files", help="a folder of a session's workspace")
    server_flags(files)
    files.add_argument("session_id", metavar="SESSION")
    files.add_argument(
        "path",
        nargs="?",
        default="",
        metavar="PATH",
        help="a folder in it (a file: its entry alone)",
    )
    files.add_argument("--json", action="store_true", help="JSON, one entry per line")
    files.set_defaults(client_handler=_Handler("control", "files_command"))

    cat = commands.add_parser(
        "cat",
        help="print a file of a session's workspace",
        description="Print one file of a session's workspace: its bytes as they are when"
        " piped, as text on a terminal. A file longer than the server's read cap is cut"
        " there, and stderr says so.",
    )
    server_flags(cat)
    cat.add_argument("session_id", metavar="SESSION")
    cat.add_argument("path", metavar="PATH", help="the file, relative to the workspace")
    cat.set_defaults(client_handler=_Handler("control", "cat_command"))

    add_workflows(commands, server_flags, _Handler("workflow_commands", "workflows_command"))
    add_schedules(commands, server_flags, _Handler("schedule_commands", "schedules_command"))
    add_hooks(commands, server_flags, _Handler("hook_commands", "hooks_command"))

    webhooks = commands.add_parser(
        "webhooks",
        help="make, list, test and delete webhooks",
        description="Webhooks POST what happens in your sessions to a URL, signed as"
        " Standard Webhooks says (docs/webhooks.md).",
    )
    server_flags(webhooks)
    webhooks.add_argument("--json", action="store_true", help="protobuf's JSON, a line each")
    hooks = webhooks.add_subparsers(dest="action", metavar="ACTION")
    hooks.add_parser("list", help="your webhooks (the default)")
    create = hooks.add_parser("create", help="a new webhook; prints its secret, once")
    create.add_argument("url", help="https://… (or http:// to an address the server allows)")
    create.add_argument(
        "--events",
        default="approval_request,question,finished",
        metavar="KINDS",
        help="comma-separated kinds, or * (default: approval_request,question,finished)",
    )
    create.add_argument(
        "--label", action="append", metavar="KEY=VALUE", help="only sessions with this label"
    )
    create.add_argument("--session", metavar="ID", help="only this session")
    create.add_argument("--description", default="", help="what it is for")
    create.add_argument("--slack", action="store_true", help="post Slack messages")
    create.add_argument(
        "--server-wide", action="store_true", help="every principal's sessions (admins)"
    )
    for name, text in (
        ("test", "send a ping now and show the answer"),
        ("deliveries", "the webhook's deliveries, newest first, with their attempts"),
        ("delete", "delete it and its deliveries"),
        ("pause", "stop sending; deliveries wait"),
        ("resume", "send again, failures counted from 0"),
        ("rotate", "a new secret, shown once; the old one signs beside it for a while"),
    ):
        action = hooks.add_parser(name, help=text)
        action.add_argument("webhook_id", metavar="ID")
        if name == "deliveries":
            action.add_argument(
                "--limit", type=_bounded(10_000), default=20, metavar="N", help="at most N (20)"
            )
        if name == "rotate":
            action.add_argument(
                "--overlap",
                type=_seconds,
                default=None,
                metavar="S",
                help="seconds the old secret signs on (default 86400)",
            )
    for action in (create, *(hooks.choices[n] for n in ("list", "test", "deliveries", "rotate"))):
        # SUPPRESS: a sub-action's defaults would overwrite flags given before it.
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="as JSON"
        )
    for action in hooks.choices.values():
        server_flags(action, default=argparse.SUPPRESS)
    webhooks.set_defaults(client_handler=_Handler("webhooks", "webhooks_command"))
