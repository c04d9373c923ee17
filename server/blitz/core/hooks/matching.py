"""Which hooks an action calls: by its tool's name and, for commands and file changes, by
the same prefix and glob patterns as rules (docs/hooks.md, "Matchers").

A hook's `tools` are globs (`run_command`, `mcp.*`), each of which may be several
alternatives as Claude Code writes its matchers (`Write|Edit`); a tool answers to its own
name and to Claude Code's name of the same (`Bash` is `run_command`, an ACP agent's
`execute` and `terminal`; `mcp__server__tool` is MCP's `server.tool`). `commands` are
COMMAND_PREFIX patterns: unlike an allow rule, which must cover every part of a command,
a hook runs when any part starts with one (the variables a part sets first aside), and
for any command its parser will not vouch for (a substitution, a compound): a policy hook
must not be slipped past by `true && git push --force`. `paths` are PATH_GLOB patterns of
writes and deletes. A hook with `commands` or `paths` runs for those actions only. Names
are short and patterns bounded when made (checks.py), so all of it runs on the loop.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from blitz.core.hooks.specs import HookSpec
from blitz.core.requests.rules import command_parts, globbed, prefix_words

__all__ = ["Target", "applies", "claude_name", "names_of"]

# Claude Code's tool names of Blitz's tools and of ACP agents' kinds; the first is the one
# a hook's JSON gives as `tool_name`.
_CLAUDE: dict[str, tuple[str, ...]] = {
    "run_command": ("Bash",),
    "terminal": ("Bash",),
    "execute": ("Bash",),
    "write_file": ("Write",),
    "write_text_file": ("Write",),
    "edit_file": ("Edit", "MultiEdit"),
    "edit": ("Edit", "Write", "MultiEdit"),
    "fetch_url": ("WebFetch",),
    "fetch": ("WebFetch",),
    "read_file": ("Read",),
    "read": ("Read",),
    "search": ("Grep",),
    "list_files": ("LS",),
    "todo": ("TodoWrite",),
}


@dataclass(frozen=True)
class Target:
    """What an action is, as matchers read it: its tool (as events name it), and the
    command it runs or the workspace path it changes, if it does."""

    tool: str
    command: str | None = None
    path: str | None = None


def claude_name(tool: str) -> str:
    """Claude Code's name of the tool: `Bash` for `run_command`, `mcp__s__t` for MCP's
    `s.t`, else the tool's own."""
    names = names_of(tool)
    return names[1] if len(names) > 1 else tool


def names_of(tool: str) -> tuple[str, ...]:
    """Every name the tool answers to: its own first, then Claude Code's."""
    if "." in tool and tool not in _CLAUDE:
        server, _, name = tool.partition(".")
        return (tool, f"mcp__{server}__{name}")
    return (tool, *_CLAUDE.get(tool, ()))


def applies(spec: HookSpec, target: Target) -> bool:
    """Whether the hook runs for the action (the hook's event already chosen)."""
    if spec.disabled:
        return False
    if spec.tools and not _named(spec.tools, names_of(target.tool)):
        return False
    if spec.commands:
        if target.command is None or not _commanded(spec.commands, target.command):
            return False
    if spec.paths:
        if target.path is None or not any(globbed(target.path, p) for p in spec.paths):
            return False
    return True


def _named(patterns: tuple[str, ...], names: tuple[str, ...]) -> bool:
    return any(
        fnmatch.fnmatchcase(name, alternative.strip())
        for pattern in patterns
        for alternative in pattern.split("|")
        for name in names
        if alternative.strip()
    )


def _commanded(prefixes: tuple[str, ...], command: str) -> bool:
    parts = command_parts(command)
    if parts is None:
        return True  # nothing vouches for what it runs: the hook decides
    # What each part runs: its words after any `NAME=value` it sets first.
    runs = [part[_assignments(part) :] for part in parts]
    for prefix in prefixes:
        words = prefix_words(prefix)
        if words and any(part[: len(words)] == words for part in runs):
            return True
    return False


def _assignments(words: list[str]) -> int:
    """How many of a command's first words set a variable (`GIT_TRACE=1 git push`)."""
    count = 0
    for word in words:
        name, sep, _ = word.partition("=")
        if not sep or not name.replace("_", "a").isalnum() or name[0].isdigit():
            break
        count += 1
    return count
