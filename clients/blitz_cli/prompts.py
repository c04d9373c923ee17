"""Asking the user: one key per approval decision, numbered answers to questions.

Keys are read one at a time with the terminal in cbreak mode (no Enter needed); when
stdin is not a terminal a whole line is read instead, so scripts can pipe answers in.
A Ctrl-C typed at a key prompt arrives as a character in cbreak mode; it is turned back
into KeyboardInterrupt so it cancels the turn as it does anywhere else. A key prompt also
ends, raising `Closed`, when `closed()` says the request was answered elsewhere.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from blitz.v1 import turn_pb2

__all__ = [
    "Approval",
    "Closed",
    "ask_approval",
    "ask_plan",
    "ask_question",
    "edit_line",
    "parse_answers",
    "read_line",
]

_POLL = 0.1  # seconds between looks at `closed()` while a key prompt waits


class Closed(Exception):
    """The request was answered elsewhere while its prompt waited."""


@dataclass(frozen=True)
class Approval:
    """What the user decided about one approval request."""

    decision: str  # "once", "session", "always", "deny", or "park" (leave it for later)
    reason: str = ""
    command: str = ""
    interrupt: bool = False  # a deny that also stops the turn
    rule: turn_pb2.RuleMatch | None = None  # the suggested rule, to make instead


@contextlib.contextmanager
def _cbreak() -> Iterator[None]:
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        # TCSANOW, not the default TCSAFLUSH: a key typed before the prompt appeared is
        # kept, not thrown away.
        tty.setcbreak(fd, termios.TCSANOW)
        # cbreak keeps ISIG, so Ctrl-C would still raise; we want it as a key instead, to
        # treat it the same whether the prompt or the stream was waiting.
        attrs = termios.tcgetattr(fd)
        attrs[3] &= ~termios.ISIG
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_key(
    console: Console, prompt: str, keys: str, closed: Callable[[], bool] | None = None
) -> str:
    """One of `keys`, typed without Enter on a terminal (first letter of a line otherwise).

    Raises `Closed` when `closed()` turns true first (looked at while no key is typed).
    """
    console.print(Text(prompt, style="bold yellow"), end="")
    if not sys.stdin.isatty():
        while True:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            key = line.strip()[:1].lower()
            console.print(Text(key))
            if key and key in keys:  # `"" in keys` is true: a blank line asks again
                return key
            console.print(Text(prompt, style="bold yellow"), end="")
    fd = sys.stdin.fileno()
    with _cbreak():
        while True:
            # select, then one byte read unbuffered: a buffered read could hold keys that
            # select no longer sees.
            if closed is not None:
                ready, _, _ = select.select([fd], [], [], _POLL)
                if not ready:
                    if closed():
                        console.print()
                        raise Closed
                    continue
            key = os.read(fd, 1).decode(errors="replace")
            if key == "\x03":
                console.print()
                raise KeyboardInterrupt
            if key in ("\x04", ""):
                console.print()
                raise EOFError
            if key.lower() in keys:
                console.print(Text(key.lower()))
                return key.lower()


def read_line(console: Console, prompt: str, closed: Callable[[], bool] | None = None) -> str:
    """A line typed at `prompt`; on a terminal, read key by key (Backspace and Ctrl-U edit)
    so that `closed()` is looked at while it waits, raising `Closed`. Otherwise input()."""
    if closed is None or not sys.stdin.isatty():
        return input(prompt)
    console.print(Text(prompt), end="")
    fd = sys.stdin.fileno()
    typed = ""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with _cbreak():
        while True:
            ready, _, _ = select.select([fd], [], [], _POLL)
            if not ready:
                if closed():
                    console.print()
                    raise Closed
                continue
            for key in decoder.decode(os.read(fd, 64)):
                if key in ("\r", "\n"):
                    console.print()
                    return typed
                if key == "\x03":
                    console.print()
                    raise KeyboardInterrupt
                if key == "\x04" and not typed:
                    console.print()
                    raise EOFError
                if key in ("\x7f", "\b"):
                    if typed:
                        typed = typed[:-1]
                        console.file.write("\b \b")
                elif key == "\x15":  # Ctrl-U: the whole line
                    console.file.write("\b \b" * len(typed))
                    typed = ""
                elif key.isprintable():
                    typed += key
                    console.file.write(key)
                console.file.flush()


def edit_line(prompt: str, default: str = "") -> str:
    """A line of input with `default` already typed in, editable (readline where present)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - readline ships with CPython on POSIX
        answer = input(f"{prompt}[{default}] ")
        return answer or default
    readline.set_startup_hook(lambda: readline.insert_text(default))
    try:
        return input(prompt)
    finally:
        readline.set_startup_hook()


def approval_keys(request: turn_pb2.ApprovalRequest) -> tuple[str, str]:
    """The keys a request allows and the line that names them: only its
    available_decisions (all four from a server that does not say), `r` for its suggested
    rule, `e` for a command, and `p` to leave it parked."""
    available = set(request.available_decisions) or {
        turn_pb2.DECISION_ONCE,
        turn_pb2.DECISION_SESSION,
        turn_pb2.DECISION_ALWAYS,
        turn_pb2.DECISION_DENY,
    }
    keys, shown = "", list[str]()
    if turn_pb2.DECISION_ONCE in available:
        keys, shown = keys + "o", [*shown, "[o]nce"]
    if turn_pb2.DECISION_SESSION in available:
        keys, shown = keys + "s", [*shown, "[s]ession"]
    if turn_pb2.DECISION_ALWAYS in available:
        keys, shown = keys + "a", [*shown, "[a]lways"]
        if request.HasField("suggested_rule") and request.suggested_rule.pattern:
            keys, shown = keys + "r", [*shown, "[r]ule"]
    if turn_pb2.DECISION_DENY in available:
        keys, shown = keys + "dx", [*shown, "[d]eny", "[x] deny+stop"]
    if request.kind == turn_pb2.ACTION_KIND_COMMAND and turn_pb2.DECISION_ONCE in available:
        keys, shown = keys + "e", [*shown, "[e]dit"]
    return keys + "p", " ".join([*shown, "[p]ark"])


def ask_approval(
    console: Console,
    request: turn_pb2.ApprovalRequest,
    closed: Callable[[], bool] | None = None,
) -> Approval:
    """o / s / a / r (always, the suggested rule) / d (then a reason) / x (deny, then a
    reason, and stop the turn) / e (edit the command, then run it once) / p (park: leave
    the request open and the chat)."""
    keys, shown = approval_keys(request)
    while True:
        key = _read_key(console, f"{shown} › ", keys, closed)
        if key == "p":
            return Approval("park")
        if key == "r":
            rule = turn_pb2.RuleMatch()
            rule.CopyFrom(request.suggested_rule)
            return Approval("always", rule=rule)
        if key in "dx":
            what = "deny and stop the turn" if key == "x" else "deny"
            # The reason goes to the model: say what the next line is for.
            reason = input(f"{what}, telling the agent this reason (Enter for none): ").strip()
            return Approval("deny", reason=reason, interrupt=key == "x")
        if key == "a" and request.destructive and not _confirmed(request):
            console.print("[dim]not saved; choose again[/]")
            continue
        if key != "e":
            return Approval({"o": "once", "s": "session", "a": "always"}[key])
        command = edit_line("command: ", request.detail).strip()
        if command:
            return Approval("once", command=command if command != request.detail else "")
        # Approving nothing would run the command as it was: ask again.
        console.print("[dim]no command given; choose again[/]")


def _confirmed(request: turn_pb2.ApprovalRequest) -> bool:
    """ALWAYS for a destructive command is never one key: the user types `yes`."""
    label = "".join(c for c in request.scope_label if c.isprintable())
    answer = input(f"always allow exactly `{label}` in this workspace? type yes: ")
    return answer.strip().lower() == "yes"


def ask_plan(console: Console) -> tuple[str, str]:
    """What to do with a proposed plan: ("accept", ""), ("reject", feedback) or ("later", "")."""
    key = _read_key(console, "plan: [a]ccept [r]eject [l]ater › ", "arl")
    if key == "a":
        return "accept", ""
    if key == "r":
        return "reject", input("feedback (Enter for none): ").strip()
    return "later", ""


def parse_answers(question: turn_pb2.Question, line: str) -> list[str] | None:
    """The answers a line means ("2", "1,3", or an option's text), or None if invalid."""
    line = line.strip()
    if not question.options:
        return [line] if line else None
    parts = [p.strip() for p in line.split(",")] if question.multi_select else [line]
    answers: list[str] = []
    for part in parts:
        if part.isdecimal() and 1 <= int(part) <= len(question.options):
            answers.append(question.options[int(part) - 1])
        elif part in question.options:
            answers.append(part)
        else:
            return None
    return list(dict.fromkeys(answers)) or None


def ask_question(
    console: Console,
    question: turn_pb2.Question,
    read: Callable[[str], str] = input,
) -> Sequence[str]:
    """Ask until the answer is valid: option numbers, or free text when there are none."""
    while True:
        answers = parse_answers(question, read("answer › "))
        if answers is not None:
            return answers
        if question.options:
            console.print(f"[red]type a number from 1 to {len(question.options)}[/]")
        else:
            console.print("[red]type an answer[/]")
