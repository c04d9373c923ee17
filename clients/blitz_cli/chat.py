"""`blitz chat`: a terminal conversation with one session.

The loop reads a prompt, runs it as a turn and renders its events, answering approval
requests and questions as they come. A bracketed paste of several lines is one prompt.
Lines starting with `/` are server commands (`Turn(command=True)`), except the chat's own
(`CLIENT_COMMANDS`: /help, /thoughts, /mode, /rewind, …). Ctrl-C cancels the running turn
and keeps showing it until its `finished`; a second Ctrl-C within two seconds (or Ctrl-D
at the prompt) leaves. `p` at an approval leaves with the turn parked, and says how to
come back: `--session ID` reattaches (the session's events, the user's prompts among them,
are replayed, and a turn still parked on a request is picked up where it waits). While a
request's prompt waits, the chat asks now and then whether it is still open: answered
elsewhere, the prompt closes and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import mimetypes
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from blitz.v1 import session_pb2, turn_pb2
from blitz_cli.completion import complete_commands
from blitz_cli.forms import ask_form
from blitz_cli.picker import pick_session
from blitz_cli.prompts import (
    Closed,
    ask_approval,
    ask_plan,
    ask_question,
    read_line,
)
from blitz_cli.render import Renderer, error_line
from blitz_client import Blitz, BlitzError, Stream, TurnOptions

__all__ = ["CLIENT_COMMANDS", "ChatOptions", "chat", "chat_command"]

_DOUBLE_PRESS = 2.0  # seconds within which a second Ctrl-C leaves
_LOOK_EVERY = 1.0  # seconds between looks at whether a prompted request is still open
_HELP = (
    "Type a prompt (end a line with \\ to go on to the next; a paste is one prompt)."
    " [bold]/help[/] lists the commands, [bold]/quit[/] leaves. Ctrl-C cancels a turn;"
    " twice leaves."
)
_MODES = ("ask", "accept_edits", "read_only", "plan", "bypass")

CLIENT_COMMANDS = {
    "/help": "this list: the chat's commands and the server's",
    "/thoughts": "show or fold the model's reasoning",
    "/mode [NAME]": "the session's mode, or set it: " + ", ".join(_MODES),
    "/rewind TURN [--files]": "back to a finished turn (its id or number), files too",
    "/queue TEXT": "run TEXT after the session's running turn (a queued turn)",
    "/steer TEXT": "a message for the running turn's next model call",
    "/aside TEXT": "a side question, answered beside the running turn",
    "/image PATH": "attach an image (PNG, JPEG, GIF, WebP) to the next prompt",
    "/diff": "what the agent's file tools changed in the session",
    "/files [PATH]": "the workspace's files (a folder of it)",
    "/sessions": "pick another session to attach to",
    "/quit": "leave (Ctrl-D too); a parked turn stays parked",
}
"""The chat's own commands; every other /command goes to the server."""


class _Leave(Exception):
    """The user asked to leave (Ctrl-C twice, Ctrl-D, /quit)."""


class _Pending:
    """Whether a request is still open, asked of the server at most once a `_LOOK_EVERY`.

    The chat's client is busy with nothing while a prompt waits (the turn's stream is read
    only between prompts), so it asks GetSession; a request answered by another client
    drops out of `pending`, and its prompt closes.
    """

    def __init__(self, client: Blitz, session_id: str, request_id: str) -> None:
        self._client = client
        self._session_id = session_id
        self._request_id = request_id
        self._next = time.monotonic() + _LOOK_EVERY

    def answered(self) -> bool:
        if time.monotonic() < self._next:
            return False
        self._next = time.monotonic() + _LOOK_EVERY
        try:
            session = self._client.session(self._session_id)
        except BlitzError:
            return False  # the stream will say what happened
        return all(
            getattr(e, e.WhichOneof("kind") or "accepted").request_id != self._request_id
            for e in session.pending
            if e.WhichOneof("kind") in ("approval_request", "question")
        )


@dataclass(frozen=True)
class ChatOptions:
    """What `blitz chat` was asked for on its command line."""

    session_id: str = ""
    model: str = ""
    title: str = ""
    plan: bool = False
    read_only: str = ""
    per_call_usage: bool = False
    pick: bool = False


@dataclass
class _Chat:
    client: Blitz
    console: Console
    options: ChatOptions
    renderer: Renderer
    session: session_pb2.Session = field(default_factory=session_pb2.Session)
    last_interrupt: float = 0.0
    handled: set[str] = field(default_factory=set)  # request ids already answered here
    proposed: str = ""  # the plan the last turn proposed, until the user decides it
    images: list[str] = field(default_factory=list)  # uploaded for the next prompt

    def interrupted(self) -> None:
        """A Ctrl-C: raises _Leave when it is the second in a short while."""
        now = time.monotonic()
        if now - self.last_interrupt < _DOUBLE_PRESS:
            raise _Leave
        self.last_interrupt = now

    # The prompt loop

    def loop(self) -> None:
        while True:
            try:
                line = input("› ")
                # A trailing backslash continues the prompt on the next line, as in a shell.
                while line.endswith("\\"):
                    line = line[:-1] + "\n" + input("… ")
            except KeyboardInterrupt:
                self.console.print()
                self.interrupted()
                self.console.print("[dim](Ctrl-C again to leave)[/]")
                continue
            except EOFError:
                self.console.print()
                raise _Leave from None
            line = line.strip()
            if not line:
                continue
            self.last_interrupt = 0.0  # a new prompt starts a new count of Ctrl-Cs
            if line in ("/quit", "/exit"):
                raise _Leave
            if not self.client_command(line):
                self.turn(line)

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
                self.diff()
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
        words = arguments.split()
        files = "--files" in words
        words = [w for w in words if w != "--files"]
        if len(words) != 1:
            self.console.print("[red]/rewind TURN [--files]: a turn id or number[/]")
            return
        turn_id = words[0]
        if turn_id.isdecimal():
            turns = [t.turn_id for t in self.client.list_turns(self.session.id)]
            if not 1 <= int(turn_id) <= len(turns):
                self.console.print(f"[red]there are {len(turns)} turns[/]")
                return
            turn_id = turns[int(turn_id) - 1]
        response = self.client.rewind(self.session.id, turn_id, files=files)
        self.session = response.session
        restored = f" · {len(response.rewound.restored_paths)} files restored" if files else ""
        self.console.print(f"[dim]  ↳ rewound to turn {turn_id}{restored}[/]")

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

    def diff(self) -> None:
        response = self.client.diff(self.session.id)
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

    def turn(self, line: str, *, busy: str = "reject", aside: bool = False) -> None:
        turn_id = f"t_{uuid.uuid4().hex}"
        fields: TurnOptions = {"command": line.startswith("/")}
        if self.options.plan:
            fields["plan"] = True
        if self.options.read_only:
            fields["read_only"] = self.options.read_only
        if aside:
            fields["aside"] = True
        if self.images and not fields["command"]:
            fields["image_ids"], self.images = self.images, []
        self.renderer.thinking()
        events = self.client.run(self.session.id, line, turn_id=turn_id, busy=busy, **fields)
        self.drive(events, turn_id)
        while self.proposed:
            self.decide_plan(self.proposed)

    def decide_plan(self, plan_id: str) -> None:
        """The turn proposed a plan: carry it out, reject it (with feedback), or leave it."""
        self.proposed = ""
        choice, feedback = ask_plan(self.console)
        try:
            if choice == "accept":
                turn_id = f"t_{uuid.uuid4().hex}"
                self.renderer.thinking()
                self.drive(
                    self.client.accept_plan(self.session.id, plan_id, turn_id=turn_id), turn_id
                )
            elif choice == "reject":
                self.client.reject_plan(self.session.id, plan_id, feedback)
                self.console.print(
                    "[dim]  ↳ plan rejected; your next prompt goes with the feedback[/]"
                )
        except BlitzError as exc:
            self.console.print(error_line(exc.reason, exc.message))

    # One turn's events

    def drive(self, events: Stream[turn_pb2.TurnEvent], turn_id: str) -> None:
        """Render a turn to its end, asking for what it waits on; Ctrl-C cancels it."""
        started = ended = False
        while True:
            try:
                try:
                    # The stream ends after the turn's `finished`.
                    for event in events:
                        started = True
                        ended = event.HasField("finished")
                        if event.HasField("plan_proposed"):
                            self.proposed = event.plan_proposed.plan_id
                        self.renderer.event(event)
                        self.respond(event)
                    return
                finally:
                    self.renderer.settle()
                    events.close()
            except KeyboardInterrupt:
                self.console.print()
                self.interrupted()
                if ended or (not self.cancel(turn_id) and not started):
                    return  # nothing left to follow
                self.console.print("[yellow]cancelling… (Ctrl-C again to leave)[/]")
            except BlitzError as exc:
                self.console.print(error_line(exc.reason, exc.message))
                if exc.reason == "SESSION_BUSY":
                    self.console.print("[dim]/queue TEXT runs it when the session is free[/]")
                return
            events = self.client.follow_turn(
                self.session.id, turn_id, after_seq=self.renderer.last_seq
            )

    def cancel(self, turn_id: str) -> bool:
        try:
            self.client.cancel(self.session.id, turn_id)
        except BlitzError as exc:
            if exc.reason == "NO_RUNNING_TURN":
                return False
            self.console.print(f"[red]could not cancel: {exc.reason} {escape(exc.message)}[/]")
        return True

    def respond(self, event: turn_pb2.TurnEvent) -> None:
        """Answer an approval request or a question, once, if it is still open."""
        kind = event.WhichOneof("kind")
        if kind not in ("approval_request", "question"):
            return
        request_id = getattr(event, kind).request_id
        if request_id in self.handled:
            return
        self.handled.add(request_id)
        closed = _Pending(self.client, self.session.id, request_id).answered
        while True:
            try:
                if kind == "approval_request":
                    self.approve(event.approval_request, closed)
                elif event.question.HasField("form"):
                    form = ask_form(self.console, event.question)
                    self.client.answer(
                        self.session.id, request_id, values=form.values, decline=form.decline
                    )
                else:
                    answers = ask_question(
                        self.console,
                        event.question,
                        lambda prompt: read_line(self.console, prompt, closed),
                    )
                    self.client.answer(self.session.id, request_id, answers)
                break
            except Closed:
                # The stream's resolution, next, says who and how.
                self.console.print("[dim]  ↳ answered in another client[/]")
                break
            except BlitzError as exc:
                if exc.reason == "ALREADY_RESOLVED":
                    self.console.print("[dim]  ↳ already answered in another client[/]")
                    break
                self.console.print(f"[yellow]{exc.reason}: {escape(exc.message)}[/]")
                if exc.reason != "INVALID_ARGUMENT":
                    break  # the turn ended first, say: it goes on
                # The server refused this choice (a rule for a secret, say): choose again.
        self.renderer.thinking()

    def approve(self, request: turn_pb2.ApprovalRequest, closed: Callable[[], bool] | None) -> None:
        approval = ask_approval(self.console, request, closed)
        if approval.decision == "park":
            self.console.print(
                "[yellow]the turn stays parked on this request; come back with:[/]\n"
                f"  [bold]blitz chat --session {self.session.id}[/]"
            )
            raise _Leave
        self.client.decide(
            self.session.id,
            request.request_id,
            approval.decision,
            reason=approval.reason,
            command=approval.command,
            interrupt=approval.interrupt,
            rule=approval.rule,
        )

    # Reattaching

    def reattach(self) -> None:
        """Replay the session so far; pick up a turn that is still running or parked.

        The replay stops before the first open request, and the open turn is then
        followed from there, so its requests are shown once, each with its prompt.
        """
        open_seqs = [e.seq for e in self.session.pending if e.seq]
        cut = min(open_seqs) if open_seqs else None
        ended = False  # the open turn may end while the replay is read
        with self.client.watch(self.session.id, follow=False) as replay:
            for event in replay:
                if cut is not None and event.seq >= cut:
                    break
                self.renderer.event(event, replay=True)
                ended = ended or (
                    event.HasField("finished") and event.turn_id == self.session.turn_id
                )
        self.renderer.settle()
        if not self.session.turn_id or ended:
            return
        self.console.rule("[bold]this turn is still open[/]")
        after = cut - 1 if cut is not None else self.renderer.last_seq
        events = self.client.follow_turn(self.session.id, self.session.turn_id, after_seq=after)
        self.drive(events, self.session.turn_id)


def chat(
    options: ChatOptions, *, server: str, token: str | None = None, ca_file: str | None = None
) -> int:
    """Run the chat until the user leaves; returns the exit code."""
    console = Console(highlight=False)
    try:
        # The prompt line gets history and editing; a paste arrives bracketed, so that its
        # lines are one prompt (CPython turns readline's bracketed paste off).
        import readline

        readline.parse_and_bind("set enable-bracketed-paste on")
    except ImportError:  # pragma: no cover - readline ships with CPython on POSIX
        pass
    with Blitz(server, token=token, ca_file=ca_file, reconnect_timeout=10.0) as client:
        renderer = Renderer(console, per_call_usage=options.per_call_usage)
        state = _Chat(client, console, options, renderer)
        try:
            info = _server_info(client)
            if options.pick:
                with contextlib.suppress(EOFError, KeyboardInterrupt):
                    picked = pick_session(client, console)
                if picked is None:
                    return 0
                state.session = picked
            elif options.session_id:
                state.session = client.session(options.session_id)
            else:
                state.session = client.create_session(model=options.model, title=options.title)
        except BlitzError as exc:
            console.print(error_line(exc.reason, exc.message))
            return 1
        state.renderer.session(state.session)
        complete_commands(client, state.session.id, CLIENT_COMMANDS)
        if info is not None:
            state.renderer.server(info)
        console.print(f"[dim]{_HELP}[/]")
        # The loop ends only by raising. EOFError: Ctrl-D at a key or reason prompt, which
        # leaves as it does at the prompt. KeyboardInterrupt: between two reads, outside a
        # turn: the same as at the prompt, but leave.
        with contextlib.suppress(_Leave, EOFError, KeyboardInterrupt):
            if options.session_id or options.pick:
                state.reattach()
            state.loop()
    return 0


def _server_info(client: Blitz) -> session_pb2.ServerInfo | None:
    """The server's info; None from a server older than GetServerInfo."""
    try:
        return client.server_info()
    except BlitzError as exc:
        if exc.code == "unimplemented":
            return None
        raise


def chat_command(
    args: argparse.Namespace, *, server: str, token: str | None, ca_file: str | None = None
) -> int:
    """`blitz chat [--session ID]`: a terminal conversation with one session."""
    options = ChatOptions(
        session_id=args.session or "",
        model=args.model,
        title=args.title,
        plan=args.plan,
        read_only=args.read_only,
        per_call_usage=args.per_call_usage,
        pick=args.pick,
    )
    return chat(options, server=server, token=token, ca_file=ca_file)
