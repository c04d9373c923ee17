"""The chat's own commands (`CLIENT_COMMANDS`: /help, /thoughts, /mode, /rewind, …),
carried out by the client; every other /command goes to the server as a turn.

A command that fails on the server prints its error and the chat goes on.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from rich.markup import escape
from rich.syntax import Syntax

from blitz.v1 import session_pb2, turn_pb2
from blitz_cli.chat_state import ChatState
from blitz_cli.lines import error_line
from blitz_cli.picker import pick_session
from blitz_cli.turn_numbers import turn_id_in, turn_id_of
from blitz_client import BlitzError

__all__ = ["CLIENT_COMMANDS", "ChatCommands"]

_MODES = ("ask", "accept_edits", "read_only", "plan", "bypass")

CLIENT_COMMANDS = {
    "/help": "this list: the chat's commands and the server's",
    "/thoughts": "show or fold the model's reasoning",
    "/mode [NAME]": "the session's mode, or set it: " + ", ".join(_MODES),
    "/rewind [TURN] [--files]": "the turns to go back to; back to one (its id or number)",
    "/busy [queue|steer]": "what a line typed while a turn runs does (queue: the next turn)",
    "/queue TEXT": "run TEXT after the session's running turn (a queued turn)",
    "/steer TEXT": "a message for the running turn's next model call",
    "/aside TEXT": "a side question, answered beside the running turn",
    "/image PATH": "attach an image (PNG, JPEG, GIF, WebP) to the next prompt",
    "/diff [TURN]": "what changed in the session, or in one turn (its id or number)",
    "/files [PATH]": "the workspace's files (a folder of it)",
    "/sessions": "pick another session to attach to",
    "/quit": "leave (Ctrl-D too); a parked turn stays parked",
}
"""The chat's own commands; every other /command goes to the server."""


class ChatCommands(ChatState):
    """The chat's own commands; `turn` and `reattach` are the chat's (`chat.py`)."""

    def turn(self, line: str, *, busy: str = "reject", aside: bool = False) -> None:
        raise NotImplementedError

    def reattach(self) -> None:
        raise NotImplementedError

    def set_while_busy(self, how: str) -> None:
        raise NotImplementedError

    def client_command(self, line: str) -> bool:
        """Carry out one of the chat's own commands; False when `line` is none of them."""
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        try:
            if word == "/thoughts":
                self.toggle_thoughts()
            elif word == "/help":
                self.help()
            elif word == "/mode":
                self.mode(rest)
            elif word == "/rewind":
                self.rewind(rest)
            elif word == "/busy":
                self.busy(rest)
            elif word == "/queue" and rest:
                self.turn(rest, busy="enqueue")
            elif word == "/steer" and rest:
                turn_id = self.client.steer(self.session.id, rest)
                self.console.print(f"[dim]  ↳ steered turn {turn_id}[/]")
            elif word == "/aside" and rest:
                self.turn(rest, aside=True)
            elif word == "/image" and rest:
                self.image(rest)
            elif word == "/diff":
                self.diff(rest)
            elif word == "/files":
                self.files(rest)
            elif word == "/sessions":
                self.pick()
            else:
                return False
        except BlitzError as exc:
            self.console.print(error_line(exc.reason, exc.message))
        return True

    def help(self) -> None:
        self.console.print("[bold]chat commands[/]")
        for name, text in CLIENT_COMMANDS.items():
            self.console.print(f"  {escape(name)}: {escape(text)}")
        try:
            commands = self.client.commands(self.session.id)
        except BlitzError as exc:
            self.console.print(error_line(exc.reason, exc.message))
            return
        self.console.print("[bold]server commands[/]")
        own = {name.split(" ", 1)[0] for name in CLIENT_COMMANDS}
        for command in commands:
            if f"/{command.name}" in own:
                continue  # the chat's own answers it (the server's /help lists only its own)
            arguments = f" {command.arguments}" if command.arguments else ""
            self.console.print(
                f"  /{escape(command.name)}{escape(arguments)}: {escape(command.description)}"
            )

    def mode(self, name: str) -> None:
        if not name:
            mode = turn_pb2.SessionMode.Name(self.session.mode)  # type: ignore[arg-type]
            current = mode.removeprefix("SESSION_MODE_").lower()
            if current == "unspecified":
                current = "ask"
            self.console.print(f"[dim]mode: {current} (one of {', '.join(_MODES)})[/]")
            return
        try:
            self.session = self.client.update_session(self.session.id, mode=name)
        except ValueError as exc:
            self.console.print(f"[red]{escape(str(exc))}[/]")
            return
        self.console.print(f"[dim]  ↳ mode: {escape(name.lower())}[/]")

    def rewind(self, arguments: str) -> None:
        """`/rewind`: the turns it can go back to, numbered; `/rewind N [--files]`: back to
        turn N once the user confirms (later turns leave the history)."""
        words = arguments.split()
        files = "--files" in words
        words = [w for w in words if w != "--files"]
        turns = list(self.client.list_turns(self.session.id))
        if not words:
            self._list_turns(turns)
            return
        if len(words) != 1:
            self.console.print("[red]/rewind TURN [--files]: a turn id or number[/]")
            return
        try:
            turn_id = turn_id_in([t.turn_id for t in turns], words[0])
        except ValueError as exc:
            self.console.print(f"[red]{escape(str(exc))}[/]")
            return
        numbers = {t.turn_id: n for n, t in enumerate(turns, 1)}
        number = numbers.get(turn_id)
        later = len(turns) - number if number is not None else 0
        what = f"turn {number}" if number is not None else f"turn {turn_id}"
        gone = (
            "; the later turn leaves the history"
            if later == 1
            else f"; the {later} later turns leave the history"
        )
        also = " and the workspace's files go back to it" if files else ""
        answer = input(f"rewind to {what}{gone if later else ''}{also}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            self.console.print("[dim]  ↳ not rewound[/]")
            return
        response = self.client.rewind(self.session.id, turn_id, files=files)
        self.session = response.session
        restored = f" · {len(response.rewound.restored_paths)} files restored" if files else ""
        self.console.print(f"[dim]  ↳ rewound to {what}{restored}[/]")

    def _list_turns(self, turns: list[session_pb2.TurnSummary]) -> None:
        finished = [
            (n, t) for n, t in enumerate(turns, 1) if t.state == session_pb2.TURN_STATE_FINISHED
        ]
        if not finished:
            self.console.print("[dim]no finished turn to rewind to yet[/]")
            return
        for number, turn in finished:
            text = " ".join(turn.turn.text.split())
            text = text if len(text) <= 70 else text[:69] + "…"
            self.console.print(f"  {number:>3}  {escape(text)}")
        self.console.print("[dim]/rewind N goes back to turn N (--files: its files too)[/]")

    def busy(self, how: str) -> None:
        if how and how not in ("queue", "steer"):
            self.console.print("[red]/busy queue or /busy steer[/]")
            return
        if how:
            self.set_while_busy(how)
        what = "queues the next turn" if self.while_busy == "queue" else "steers the turn"
        self.console.print(f"[dim]  ↳ a line typed while a turn runs {what}[/]")

    def image(self, path: str) -> None:
        media_type = mimetypes.guess_type(path)[0] or ""
        try:
            data = Path(path).expanduser().read_bytes()
        except OSError as exc:
            self.console.print(f"[red]cannot read {escape(path)}: {escape(exc.strerror or '')}[/]")
            return
        uploaded = self.client.upload_image(self.session.id, data, media_type)
        self.images.append(uploaded.image_id)
        self.console.print(
            f"[dim]  ↳ image {uploaded.image_id} ({uploaded.size} B) goes with the next prompt[/]"
        )

    def diff(self, turn: str) -> None:
        turn_id = ""
        if turn:
            try:
                turn_id = turn_id_of(self.client, self.session.id, turn)
            except ValueError as exc:
                self.console.print(f"[red]{escape(str(exc))}[/]")
                return
        response = self.client.diff(self.session.id, turn_id=turn_id)
        if not response.diff:
            self.console.print("[dim]no changes[/]")
            return
        self.console.print(Syntax(response.diff, "diff", background_color="default"))

    def files(self, path: str) -> None:
        for entry in self.client.list_files(self.session.id, path):
            name = entry.path + ("/" if entry.directory else "")
            size = "" if entry.directory else f" [dim]{entry.size} B[/]"
            self.console.print(f"  {escape(name)}{size}")

    def pick(self) -> None:
        """Choose one of the caller's sessions, newest first, and attach to it."""
        chosen = pick_session(self.client, self.console)
        if chosen is None:
            return
        self.session = chosen
        self.handled.clear()
        self.renderer.session(chosen)
        self.reattach()

    def toggle_thoughts(self) -> None:
        self.renderer.show_thoughts = not self.renderer.show_thoughts
        state = "shown" if self.renderer.show_thoughts else "folded"
        self.console.print(f"[dim]thoughts are {state}[/]")
        if self.renderer.show_thoughts and self.renderer.last_thought:
            self.console.print(self.renderer.last_thought.strip(), style="dim italic")
