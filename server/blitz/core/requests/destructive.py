"""The commands Blitz calls destructive: the one list, and the test of a command against it.

A destructive command is one whose harm a later turn cannot undo: it deletes, overwrites a
device or a history, or tears down what runs elsewhere. For such a command no broader rule
is suggested (`rules.suggested_rule`), and its approval request says so
(`ApprovalRequest.destructive`), so that a client never makes ALWAYS a single key for it
(`blitz chat` asks to confirm). A person may still allow it always, exactly as asked.

Each entry is a program (a glob of its name, as `mkfs.*`), optionally the subcommand it
must be followed by, and optionally the options that make it destructive (any of them;
none listed: always). Short options are read one letter at a time (`-rf` is `-r` and
`-f`); a refspec starting with `+` is a forced push. `sudo`, `env`, `command`, `nice`,
`nohup`, `time` and `xargs` in front are looked through. docs/security.md lists the same
table (a test keeps them alike).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DESTRUCTIVE", "Destructive", "destructive"]


@dataclass(frozen=True)
class Destructive:
    """A program, the subcommand after it (or none) and the options that make it
    destructive (empty: destructive whatever its options)."""

    program: str
    subcommand: str = ""
    options: frozenset[str] = frozenset()
    why: str = ""


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


DESTRUCTIVE: tuple[Destructive, ...] = (
    Destructive("rm", why="deletes files"),
    Destructive("shred", why="overwrites files"),
    Destructive("dd", why="writes raw devices and files"),
    Destructive("mkfs", why="formats a file system"),
    Destructive("mkfs.*", why="formats a file system"),
    Destructive("wipefs", why="erases file system signatures"),
    Destructive("truncate", why="cuts files"),
    Destructive(
        "git",
        "push",
        _opts(
            "-f",
            "--force",
            "--force-with-lease",
            "--force-if-includes",
            "--mirror",
            "--delete",
            "-d",
            "+",
        ),
        why="rewrites or deletes a remote branch",
    ),
    Destructive("git", "reset", _opts("--hard", "--merge", "--keep"), why="drops changes"),
    Destructive("git", "clean", _opts("-f", "--force"), why="deletes untracked files"),
    Destructive("git", "branch", _opts("-D", "--delete"), why="deletes a branch"),
    Destructive("git", "checkout", _opts("-f", "--force", "--"), why="drops changes"),
    Destructive("git", "restore", why="drops changes"),
    Destructive("git", "stash", _opts("drop", "clear"), why="drops stashed changes"),
    Destructive("chmod", options=_opts("-R", "--recursive"), why="changes modes recursively"),
    Destructive("chown", options=_opts("-R", "--recursive"), why="changes owners recursively"),
    Destructive("find", options=_opts("-delete"), why="deletes what it finds"),
    Destructive("kubectl", "delete", why="deletes cluster resources"),
    Destructive("terraform", "destroy", why="destroys infrastructure"),
    Destructive("docker", "rm", why="deletes containers"),
    Destructive("docker", "rmi", why="deletes images"),
    Destructive("docker", "system", _opts("prune"), why="deletes unused data"),
    Destructive("docker", "volume", _opts("rm", "prune"), why="deletes volumes"),
)

# Words in front of the command that run it: the command is what follows them.
_WRAPPERS = frozenset({"sudo", "env", "command", "nice", "nohup", "time", "xargs", "exec"})
# What a command the parser could not read is cut into words by.
_CRUDE = re.compile(r"[\s;&|()`$<>{}]+")


def destructive(parts: Sequence[Sequence[str]] | None, command: str) -> Destructive | None:
    """The first entry of DESTRUCTIVE that a part of the command is (`parts`: its simple
    commands' words, `rules.command_parts`); for a command the parser could not read
    (`parts` None), any word that names a listed program counts."""
    if parts is None:
        words = [w for w in _CRUDE.split(command) if w]
        return next((e for w in words for e in DESTRUCTIVE if _program(e, w)), None)
    return next((e for part in parts if (e := _entry(tuple(part))) is not None), None)


@functools.lru_cache(maxsize=1024)
def _entry(words: tuple[str, ...]) -> Destructive | None:
    rest = list(words)
    while rest and ("=" in rest[0] or rest[0] in _WRAPPERS or rest[0].startswith("-")):
        rest.pop(0)  # assignments, wrappers and the wrappers' options
    if not rest:
        return None
    for entry in DESTRUCTIVE:
        if not _program(entry, rest[0]):
            continue
        args = rest[1:]
        if entry.subcommand:
            at = _subcommand(args)
            if at is None or args[at] != entry.subcommand:
                continue
            args = args[at + 1 :]
        if not entry.options or any(_has(entry.options, a) for a in args):
            return entry
    return None


def _subcommand(args: list[str]) -> int | None:
    """Where the subcommand is among a program's arguments: the first word that is no
    option, nor the value of `-C` or `-c` (git's global options)."""
    skip = False
    for at, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("-C", "-c"):
            skip = True
        elif not arg.startswith("-"):
            return at
    return None


def _program(entry: Destructive, word: str) -> bool:
    return fnmatch.fnmatchcase(word.rsplit("/", 1)[-1], entry.program)


def _has(options: frozenset[str], arg: str) -> bool:
    """Whether one argument is one of `options`: a long option (with `=value` or not), a
    short one among a cluster of letters, a bare word, or a forced refspec (`+`)."""
    if arg in options:
        return True
    if arg.startswith("--"):
        return arg.split("=", 1)[0] in options
    if arg.startswith("-") and len(arg) > 1:
        return any(f"-{letter}" in options for letter in arg[1:])
    return "+" in options and arg.startswith("+") and len(arg) > 1
