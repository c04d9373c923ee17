"""`blitz chat`: a terminal conversation with one session.

The loop reads a prompt, runs it as a turn and renders its events, answering approval
requests and questions as they come. A bracketed paste of several lines is one prompt.
Lines starting with `/` are server commands (`Turn(command=True)`), except the chat's own
(`CLIENT_COMMANDS`: /help, /thoughts, /mode, /rewind, …). Ctrl-C cancels the running turn
and keeps showing it until its `finished`; a second Ctrl-C within two seconds, two at an
idle prompt (however far apart) or Ctrl-D at the prompt leave. `p` at an approval leaves
with the turn parked, and says how to come back: `--session ID` reattaches (the session's
events, the user's prompts among them, are replayed, and a turn still parked on a request
is picked up where it waits). While a request's prompt waits, the chat asks now and then
whether it is still open: answered elsewhere, the prompt closes and says so.

The chat's own commands are in `chat_commands.py`, its answers to a turn's requests in
`chat_requests.py`, and what it holds in `chat_state.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import uuid

from rich.console import Console
from rich.markup import escape

from blitz.v1 import session_pb2, turn_pb2
from blitz_cli.chat_commands import CLIENT_COMMANDS, ChatCommands
from blitz_cli.chat_requests import RequestAnswers
from blitz_cli.chat_state import ChatOptions, Leave
from blitz_cli.completion import complete_commands
from blitz_cli.lines import accepted_line, error_line
from blitz_cli.picker import pick_session
from blitz_cli.prompts import ask_plan, edit_line
from blitz_cli.render import Renderer
from blitz_cli.repos import cloned_line, source_of
from blitz_cli.type_ahead import LineSender, TypeAhead
from blitz_client import Blitz, BlitzError, Stream, TurnOptions

__all__ = ["CLIENT_COMMANDS", "ChatOptions", "chat", "chat_command"]

_DOUBLE_PRESS = 2.0  # seconds within which a second Ctrl-C leaves
_HELP = (
    "Type a prompt (end a line with \\ to go on to the next; a paste is one prompt)."
    " [bold]/help[/] lists the commands, [bold]/quit[/] leaves. Ctrl-C cancels a turn;"
    " twice leaves."
)


class _Chat(ChatCommands, RequestAnswers):
    """The prompt loop and the turns it runs; its commands and answers are its bases'."""

    def set_while_busy(self, how: str) -> None:
        """What a line typed while a turn runs does: "queue" or "steer"."""
        self.while_busy = how
        self.renderer.typed_hint = _HINTS[how]

    def typed_line(self, client: Blitz, line: str) -> None:
        """A line typed while a turn runs (on the line sender's thread, with its client):
        queued as the next turn, or steering this one (`/busy`); `/queue` and `/steer`
        say which."""
        word, _, rest = line.partition(" ")
        how = {"/queue": "queue", "/steer": "steer"}.get(word, "")
        if not how and line.startswith("/"):
            self.console.print("[dim]  ↳ commands wait for the prompt: type it again there[/]")
            return
        text, how = (rest.strip(), how) if how else (line, self.while_busy)
        try:
            if how == "steer":
                client.steer(self.session.id, text)
                self.console.print(f"[dim]  ↳ steered: {escape(text)}[/]")
                return
            turn_id = f"t_{uuid.uuid4().hex}"
            with client.run(self.session.id, text, turn_id=turn_id, busy="enqueue") as stream:
                next(stream)  # accepted: it is the session's, whatever happens to this chat
            self.queued.append(turn_id)
            self.console.print(f"[dim]  ↳ queued: {escape(text)}[/]")
        except BlitzError as exc:
            self.console.print(error_line(exc.reason, exc.message))

    def interrupted(self) -> None:
        """A Ctrl-C: raises Leave when it is the second in a short while."""
        now = time.monotonic()
        if now - self.last_interrupt < _DOUBLE_PRESS:
            raise Leave
        self.last_interrupt = now

    # The prompt loop

    def loop(self) -> None:
        while True:
            try:
                # Keys typed during the last turn and not sent wait in the line.
                line = edit_line("› ", self.typing.take())
                # A trailing backslash continues the prompt on the next line, as in a shell.
                while line.endswith("\\"):
                    line = line[:-1] + "\n" + input("… ")
            except KeyboardInterrupt:
                self.console.print()
                # At an idle prompt the second press leaves however slow it comes; the
                # time window is for a press that cancelled a turn, then this one.
                if self.idle_interrupt:
                    raise Leave from None
                self.interrupted()
                self.idle_interrupt = True
                self.console.print("[dim](press Ctrl-C again to leave)[/]")
                continue
            except EOFError:
                self.console.print()
                raise Leave from None
            line = line.strip()
            if not line:
                continue
            # A new prompt starts a new count of Ctrl-Cs.
            self.last_interrupt, self.idle_interrupt = 0.0, False
            if line in ("/quit", "/exit"):
                raise Leave
            if not self.client_command(line):
                self.turn(line)

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
        while True:
            self.drive(events, turn_id)
            while self.proposed:
                self.decide_plan(self.proposed)
            if not self.queued:
                return
            # The turns queued from the input line, each shown as it runs.
            turn_id = self.queued.pop(0)
            self.console.rule("[dim]queued turn[/]", style="dim")
            self.renderer.thinking()
            events = self.client.follow_turn(self.session.id, turn_id)

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
                self.typing.start()  # the input line, under the spinner
                try:
                    # The stream ends after the turn's `finished`.
                    for event in events:
                        started = True
                        ended = event.HasField("finished")
                        if event.HasField("plan_proposed"):
                            self.proposed = event.plan_proposed.plan_id
                        self.renderer.event(event)
                        asks = event.HasField("approval_request") or event.HasField("question")
                        with self.typing.paused() if asks else contextlib.nullcontext():
                            self.respond(event)
                    return
                finally:
                    self.typing.stop()
                    self.sender.wait()  # a line sent as the turn ended is queued first
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

    # Reattaching

    def reattach(self) -> None:
        """Replay the session so far; pick up a turn that is still running or parked.

        The replay stops before the first open request, and the open turn is then
        followed from there, so its requests are shown once, each with its prompt.
        """
        turns = self.client.list_turns(self.session.id)
        self.renderer.turn_numbers = {t.turn_id: n for n, t in enumerate(turns, 1)}
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


_HINTS = {"queue": "type to queue a prompt", "steer": "type to steer this turn"}


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
        # Lines typed while a turn runs go out on a client of their own (type_ahead.py).
        state.sender = LineSender(
            lambda: Blitz(server, token=token, ca_file=ca_file), state.typed_line
        )
        state.typing = TypeAhead(state.sender.send)
        renderer.typed = lambda: state.typing.line
        state.set_while_busy(options.while_busy)
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
                if options.source is not None:
                    console.print(f"[dim]cloning {escape(options.source.url)}…[/]")
                state.session = client.create_session(
                    model=options.model,
                    title=options.title,
                    agent=options.agent,
                    source=options.source,
                    workspace=options.workspace,
                )
        except BlitzError as exc:
            console.print(error_line(exc.reason, exc.message, exc.metadata.get("field", "")))
            if hint := accepted_line(exc.metadata):
                console.print(hint)
            return 1
        state.renderer.session(state.session)
        if options.source is not None and (cloned := cloned_line(state.session)):
            console.print(cloned)
        complete_commands(client, state.session.id, CLIENT_COMMANDS)
        if info is not None:
            state.renderer.server(info)
        console.print(f"[dim]{_HELP}[/]")
        # The loop ends only by raising. EOFError: Ctrl-D at a key or reason prompt, which
        # leaves as it does at the prompt. KeyboardInterrupt: between two reads, outside a
        # turn: the same as at the prompt, but leave.
        try:
            with contextlib.suppress(Leave, EOFError, KeyboardInterrupt):
                if options.session_id or options.pick:
                    state.reattach()
                state.loop()
        finally:
            state.sender.close()
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
    """`blitz chat [--session ID | --repo URL[@REF]]`: a terminal conversation with one
    session."""
    options = ChatOptions(
        session_id=args.session or "",
        model=args.model,
        agent=args.agent,
        title=args.title,
        workspace=args.workspace,
        plan=args.plan,
        read_only=args.read_only,
        per_call_usage=args.per_call_usage,
        pick=args.pick,
        while_busy=args.while_busy,
        source=source_of(args),
    )
    return chat(options, server=server, token=token, ca_file=ca_file)
