"""Answering what a turn asks in `blitz chat`: an approval request (or parking the turn on
it and leaving), a question, a form; each once, and only while it is still open.

While a request's prompt waits, the chat asks now and then whether it is still open:
answered in another client, the prompt closes and says so. A choice the server refuses
(a rule for a secret, say) is asked again; so is a form's field the server refuses (the
chat checks each as it is typed, but the server has the last word): that field alone,
the others kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.markup import escape

from blitz.v1 import turn_pb2
from blitz_cli.chat_state import ChatState, Leave
from blitz_cli.forms import Form, ask_field, ask_form
from blitz_cli.prompts import Closed, ask_approval, ask_question, read_line
from blitz_client import Blitz, BlitzError

__all__ = ["RequestAnswers"]

_LOOK_EVERY = 1.0  # seconds between looks at whether a prompted request is still open


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


class RequestAnswers(ChatState):
    """The chat's answers to the requests of the turn it shows."""

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

        def read(prompt: str) -> str:
            return read_line(self.console, prompt, closed)

        form: Form | None = None
        refused = ""  # the form's field the server refused: asked again alone
        while True:
            try:
                if kind == "approval_request":
                    self.approve(event.approval_request, closed)
                elif event.question.HasField("form"):
                    if form is None or form.decline:
                        form = ask_form(self.console, event.question, read)
                    else:
                        form = ask_field(self.console, event.question, form, refused, read)
                    self.client.answer(
                        self.session.id, request_id, values=form.values, decline=form.decline
                    )
                else:
                    answers = ask_question(self.console, event.question, read)
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
                if form is not None and exc.reason == "INVALID_ARGUMENT":
                    # A field's value the form does not take: that field is asked again
                    # (the whole form, for a refusal of no one field).
                    where = exc.metadata.get("field", "")
                    refused = where.removeprefix("values.") if where.startswith("values.") else ""
                    self.console.print(f"[yellow]not taken: {escape(exc.message)}[/]")
                    continue
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
            raise Leave
        self.client.decide(
            self.session.id,
            request.request_id,
            approval.decision,
            reason=approval.reason,
            command=approval.command,
            interrupt=approval.interrupt,
            rule=approval.rule,
        )
