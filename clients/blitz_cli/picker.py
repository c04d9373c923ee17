"""The session picker of `blitz chat --pick` and `/sessions`: the caller's open sessions,
numbered, newest first; a number attaches to one."""

from __future__ import annotations

import itertools

from rich.console import Console
from rich.markup import escape

from blitz.v1 import session_pb2
from blitz_cli.lines import state_word
from blitz_client import Blitz

__all__ = ["pick_session"]

_SHOWN = 20


def pick_session(client: Blitz, console: Console) -> session_pb2.Session | None:
    """The caller's sessions, numbered, newest first; the one chosen (None: none)."""
    with client.sessions(page_size=_SHOWN) as sessions:  # newest first: stop at _SHOWN
        open_ones = (s for s in sessions if s.state != session_pb2.SESSION_STATE_CLOSED)
        found = list(itertools.islice(open_ones, _SHOWN))
    if not found:
        console.print("[dim]no open sessions[/]")
        return None
    for number, session in enumerate(found, 1):
        when = session.update_time.ToDatetime().strftime("%Y-%m-%d %H:%M")
        title = escape(session.title) or "[dim](untitled)[/]"
        console.print(f"  {number}. {session.id} · {title} · {state_word(session)} · {when}")
    while True:
        line = input("session (number, Enter for none) › ").strip()
        if not line:
            return None
        if line.isdecimal() and 1 <= int(line) <= len(found):
            return client.session(found[int(line) - 1].id)
        console.print(f"[red]type a number from 1 to {len(found)}[/]")
