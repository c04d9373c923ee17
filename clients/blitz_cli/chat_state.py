"""What a `blitz chat` holds while it runs: the options it was started with, its client and
renderer, the session it is attached to, and what it has answered or is yet to send.

`ChatState` is the base of the chat's parts: its own commands (`chat_commands.py`), its
answers to a turn's requests (`chat_requests.py`) and the prompt loop with the turns it
runs (`chat.py`). It only holds; it does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console

from blitz.v1 import session_pb2
from blitz_cli.render import Renderer
from blitz_cli.type_ahead import LineSender, TypeAhead
from blitz_client import Blitz

__all__ = ["ChatOptions", "ChatState", "Leave"]


class Leave(Exception):
    """The user asked to leave (Ctrl-C twice, Ctrl-D, /quit, `p` at an approval)."""


@dataclass(frozen=True)
class ChatOptions:
    """What `blitz chat` was asked for on its command line."""

    session_id: str = ""
    model: str = ""
    agent: str = ""
    title: str = ""
    workspace: str = ""  # a new session's named workspace folder ("": its own)
    plan: bool = False
    read_only: str = ""
    per_call_usage: bool = False
    pick: bool = False
    while_busy: str = "queue"  # what a line typed while a turn runs does: queue or steer
    # A repository a new session is cloned from (`--repo`).
    source: session_pb2.RepositorySource | None = None


@dataclass
class ChatState:
    """The chat's state, shared by its parts."""

    client: Blitz
    console: Console
    options: ChatOptions
    renderer: Renderer
    session: session_pb2.Session = field(default_factory=session_pb2.Session)
    last_interrupt: float = 0.0
    idle_interrupt: bool = False  # Ctrl-C was pressed at the prompt, and nothing typed since
    handled: set[str] = field(default_factory=set)  # request ids already answered here
    proposed: str = ""  # the plan the last turn proposed, until the user decides it
    images: list[str] = field(default_factory=list)  # uploaded for the next prompt
    # What a line typed while a turn runs does: "queue" (the next turn) or "steer".
    while_busy: str = "queue"
    queued: list[str] = field(default_factory=list)  # turns queued from the input line
    # The input line while a turn runs; chat.py gives it the chat's hand for its lines.
    typing: TypeAhead = field(default_factory=lambda: TypeAhead(lambda _line: None))
    sender: LineSender = field(default_factory=lambda: LineSender(_unset, lambda _c, _l: None))


def _unset() -> Blitz:
    raise RuntimeError("the chat gives the line sender its client")  # pragma: no cover
