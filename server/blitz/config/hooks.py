"""Hooks the operator declares in the configuration file, as `[[hooks]]` tables.

The `hooks` setting (`config/table.py`): in the TOML file an array of tables, in a flag or
a variable the same as JSON. Each is one hook (docs/hooks.md), with CreateHook's fields in
the file's words: `name` (its id is `hk_config_NAME`), `event` (turn_start, pre_tool,
post_tool, turn_end, notification), `command` or `url`, `secret` (an HTTP hook's signing
secret, `whsec_…`, which its receiver is told before the server runs), `tools`,
`commands`, `paths`, `timeout` (seconds), `fail` ("closed", the default, or "open"),
`principal` (only that principal's sessions; none: every one's) and `description`.
Declared hooks run before every other, in the file's order. Here the tables' shape is
checked (keys, types); what the values mean (a URL Blitz may reach, patterns rules can
read) is checked where the hooks are made, at start (`blitz.core.hooks.declared`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["HOOK_EVENTS", "DeclaredHook", "declared_hooks"]

# The events a hook runs at, as the file and the JSON name them.
HOOK_EVENTS = ("turn_start", "pre_tool", "post_tool", "turn_end", "notification")

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_STRINGS = ("name", "event", "command", "url", "secret", "fail", "principal", "description")
_LISTS = ("tools", "commands", "paths")


@dataclass(frozen=True, kw_only=True)
class DeclaredHook:
    """One `[[hooks]]` table of the configuration file."""

    name: str
    event: str
    command: str = ""
    url: str = ""
    # An HTTP hook's signing secret; kept out of repr (and so out of logs).
    secret: str = field(default="", repr=False)
    tools: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    # Seconds a run may take (None: the default).
    timeout: float | None = None
    fail_open: bool = False
    # Only this principal's sessions ("": every principal's).
    principal: str = ""
    description: str = ""


def declared_hooks(value: object) -> tuple[DeclaredHook, ...]:
    """The `hooks` setting, parsed (from the file's tables or JSON); ValueError naming the
    hook at fault."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ValueError("must be a list of hooks: [[hooks]] tables in the file")
    found: list[DeclaredHook] = []
    for number, table in enumerate(value, start=1):
        at = f"hook {number}"
        unknown = set(table) - {*_STRINGS, *_LISTS, "timeout"}
        if unknown:
            raise ValueError(f"{at}: {', '.join(sorted(unknown))} is no key of a hook")
        for key in _STRINGS:
            if key in table and not isinstance(table[key], str):
                raise ValueError(f"{at}: {key} must be a string")
        name = table.get("name", "")
        if not _NAME.match(name):
            raise ValueError(f"{at}: name must be 1-63 of a-z, 0-9, - and _, starting alphanumeric")
        at = f"hook {name!r}"
        if name in {h.name for h in found}:
            raise ValueError(f"{at}: declared twice")
        event = table.get("event", "")
        if event not in HOOK_EVENTS:
            raise ValueError(f"{at}: event must be one of {', '.join(HOOK_EVENTS)}")
        if bool(table.get("command")) == bool(table.get("url")):
            raise ValueError(f"{at}: give one of command and url")
        lists: dict[str, tuple[str, ...]] = {}
        for key in _LISTS:
            items = table.get(key, [])
            if not (isinstance(items, list) and all(isinstance(i, str) for i in items)):
                raise ValueError(f'{at}: {key} must be a list of strings, e.g. ["run_command"]')
            lists[key] = tuple(items)
        timeout = table.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"{at}: timeout must be a number of seconds above 0")
        fail = table.get("fail", "closed")
        if fail not in ("closed", "open"):
            raise ValueError(f'{at}: fail must be "closed" or "open"')
        if table.get("secret") and not table.get("url"):
            raise ValueError(f"{at}: only an HTTP hook (url) has a secret")
        found.append(
            DeclaredHook(
                name=name,
                event=event,
                command=table.get("command", ""),
                url=table.get("url", ""),
                secret=table.get("secret", ""),
                timeout=None if timeout is None else float(timeout),
                fail_open=fail == "open",
                principal=table.get("principal", ""),
                description=table.get("description", ""),
                **lists,
            )
        )
    return tuple(found)
