"""Asking the user: one key per approval decision, numbered answers to questions.

Keys are read one at a time with the terminal in cbreak mode (no Enter needed); when
stdin is not a terminal a whole line is read instead, so scripts can pipe answers in.
A Ctrl-C typed at a key prompt arrives as a character in cbreak mode; it is turned back
into KeyboardInterrupt so it cancels the turn as it does anywhere else.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from blitz.v1 import turn_pb2

__all__ = ["Approval", "ask_approval", "ask_plan", "ask_question", "parse_answers"]

_APPROVAL_KEYS = "[o]nce [s]ession [a]lways (this workspace) [d]eny [x] deny+stop [e]dit"


@dataclass(frozen=True)
class Approval:
    """What the user decided about one approval request."""

    decision: str  # "once", "session", "always" or "deny"
    reason: str = ""
    command: str = ""
    interrupt: bool = False  # a deny that also stops the turn


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


def _read_key(console: Console, prompt: str, keys: str) -> str:
    """One of `keys`, typed without Enter on a terminal (first letter of a line otherwise)."""
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
    with _cbreak():
        while True:
            key = sys.stdin.read(1)
            if key == "\x03":
                console.print()
                raise KeyboardInterrupt
            if key in ("\x04", ""):
                console.print()
                raise EOFError
            if key.lower() in keys:
                console.print(Text(key.lower()))
                return key.lower()


def _edit_line(prompt: str, default: str = "") -> str:
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


def ask_approval(console: Console, request: turn_pb2.ApprovalRequest) -> Approval:
    """o / s / a / d (then a reason) / x (deny, then a reason, and stop the turn) / e (edit
    the command, then run it once)."""
    keys = "osadxe" if request.kind == turn_pb2.ACTION_KIND_COMMAND else "osadx"
    shown = _APPROVAL_KEYS if "e" in keys else _APPROVAL_KEYS.rsplit(" ", 1)[0]
    while True:
        key = _read_key(console, f"{shown} › ", keys)
        if key in "dx":
            reason = input("reason (Enter for none): ").strip()
            return Approval("deny", reason=reason, interrupt=key == "x")
        if key != "e":
            return Approval({"o": "once", "s": "session", "a": "always"}[key])
        command = _edit_line("command: ", request.detail).strip()
        if command:
            return Approval("once", command=command if command != request.detail else "")
        # Approving nothing would run the command as it was: ask again.
        console.print("[dim]no command given; choose again[/]")


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
