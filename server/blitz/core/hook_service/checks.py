"""Every check of a HookService request: INVALID_ARGUMENT naming the field, the message
never echoing the value (docs/hooks.md, docs/protocol.md "Limits").

Matchers are bounded as rules are (docs/security.md, "Template budgets"): a tool pattern
is a short glob, a command prefix a few shell words, a path glob a rule's glob with at
most `MAX_GLOBSTARS` `**`; a hook has at most 32 of each. Only pre_tool and post_tool
hooks have matchers. A URL is checked for its form here and for its address by
`webhooks.checks.target`, as a webhook's is.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf.duration_pb2 import Duration

from blitz.core.hooks.specs import DEFAULT_TIMEOUT, EVENT_NAMES, MAX_TIMEOUT, TOOL_EVENTS
from blitz.core.requests.rules import MAX_GLOBSTARS, globstars, prefix_words
from blitz.core.webhooks.checks import check_url
from blitz.errors import BlitzError, Reason, invalid_argument

__all__ = [
    "HOOKS_MAX",
    "MUTABLE",
    "check_command",
    "check_description",
    "check_event",
    "check_kind",
    "check_mask",
    "check_matchers",
    "check_timeout",
    "check_url",
    "not_yours",
    "read_only",
    "server_wide_refused",
]

# Hooks one principal may have.
HOOKS_MAX = 50
# What UpdateHook's mask may name.
MUTABLE = (
    "command", "url", "tools", "commands", "paths", "timeout", "fail_open", "description",
    "disabled",
)  # fmt: skip
_COMMAND_MAX = 4096
_DESCRIPTION_MAX = 500
_MATCHERS_MAX = 32
_TOOL_MAX = 128
_PREFIX_MAX = 256
_GLOB_MAX = 1024


def check_event(event: int) -> int:
    if event not in EVENT_NAMES:
        *others, last = (name.upper() for name in EVENT_NAMES.values())
        raise invalid_argument("event", f"event must be {', '.join(others)} or {last}")
    return event


def check_command(command: str) -> str:
    if not command.strip():
        raise invalid_argument("command", "command is empty")
    if len(command) > _COMMAND_MAX:
        raise invalid_argument(
            "command", f"command is longer than {_COMMAND_MAX:,} characters", limit="4096"
        )
    if "\x00" in command:
        raise invalid_argument("command", "command holds a NUL character")
    return command


def check_kind(command: str, url: str) -> None:
    """Exactly one of a command and a URL."""
    if bool(command) == bool(url):
        raise invalid_argument("command", "give one of command (a command hook) and url")
    if command:
        check_command(command)
    else:
        check_url(url)


def check_matchers(
    event: int, tools: Sequence[str], commands: Sequence[str], paths: Sequence[str]
) -> None:
    for field, items in (("tools", tools), ("commands", commands), ("paths", paths)):
        if items and event not in TOOL_EVENTS:
            raise invalid_argument(field, "only pre_tool and post_tool hooks have matchers")
        if len(items) > _MATCHERS_MAX:
            raise invalid_argument(
                field, f"{field} holds more than {_MATCHERS_MAX}", limit=str(_MATCHERS_MAX)
            )
    for tool in tools:
        if not tool.strip() or len(tool) > _TOOL_MAX or any(c.isspace() and c != " " for c in tool):
            raise invalid_argument(
                "tools", f"a tool pattern is 1 to {_TOOL_MAX} characters on one line",
                limit=str(_TOOL_MAX),
            )  # fmt: skip
    for prefix in commands:
        if len(prefix) > _PREFIX_MAX or not prefix_words(prefix):
            raise invalid_argument(
                "commands", f"a command prefix is 1 to {_PREFIX_MAX} characters of words",
                limit=str(_PREFIX_MAX),
            )  # fmt: skip
    for glob in paths:
        if not glob or len(glob) > _GLOB_MAX:
            raise invalid_argument(
                "paths", f"a path glob is 1 to {_GLOB_MAX} characters", limit=str(_GLOB_MAX)
            )
        if globstars(glob) > MAX_GLOBSTARS:
            raise invalid_argument(
                "paths",
                f"a glob has at most {MAX_GLOBSTARS} `**` (each multiplies the matching work)",
                limit=str(MAX_GLOBSTARS),
            )


def check_timeout(timeout: Duration | None) -> float:
    """The seconds a run may take: the default when unset."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = timeout.ToTimedelta().total_seconds()
    except (ValueError, OverflowError):
        raise invalid_argument("timeout", "timeout is not a valid duration") from None
    if seconds <= 0 or seconds > MAX_TIMEOUT:
        raise invalid_argument(
            "timeout", "timeout must be above 0 and at most 10 minutes", limit="600s"
        )
    return seconds


def check_description(description: str) -> str:
    if len(description) > _DESCRIPTION_MAX:
        raise invalid_argument(
            "description",
            f"description is longer than {_DESCRIPTION_MAX} characters",
            limit=str(_DESCRIPTION_MAX),
        )
    return description


def check_mask(paths: Sequence[str]) -> list[str]:
    if not paths:
        raise invalid_argument("update_mask", "update_mask names no field to change")
    for path in paths:
        if path not in MUTABLE:
            raise invalid_argument("update_mask", f"update_mask may name only {', '.join(MUTABLE)}")
    return list(dict.fromkeys(paths))


def read_only(declared: str) -> BlitzError:
    return BlitzError(
        Reason.PERMISSION_DENIED,
        f"hook {declared!r} is declared in the server's configuration file: change it there",
        {"declared": declared},
    )


def not_yours(hook_id: str) -> BlitzError:
    return BlitzError(
        Reason.PERMISSION_DENIED,
        "this hook runs in your sessions, but only its owner or an admin may change it",
        {"hook_id": hook_id},
    )


def server_wide_refused() -> BlitzError:
    return BlitzError(
        Reason.PERMISSION_DENIED,
        "only an admin may make a server-wide hook",
        {"field": "server_wide"},
    )
