"""`Blitz`: the blocking client, for scripts and the `blitz` command.

It drives an `AsyncBlitz` on a private event loop (`asyncio.Runner`) that it owns, so
both clients share one implementation of resuming and deduplication. Streams are plain
iterators; each `next()` runs the loop until the next event arrives. Because it runs its
own loop, it cannot be used from inside a running event loop: use `AsyncBlitz` there.
A client belongs to the thread that made it (a loop runs in one thread at a time): make one
per thread. A Ctrl-C while it waits cancels the wait and raises KeyboardInterrupt as usual.

Its webhook and schedule calls are in `_sync_webhook_calls.py` and
`_sync_schedule_calls.py`, and the loop and `Stream` it runs on in `_blocking.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any, Literal, Self, Unpack

from blitz.v1 import session_pb2, turn_pb2, workflow_pb2, workspace_pb2
from blitz_client._async import DEFAULT_URL, AsyncBlitz
from blitz_client._blocking import Loop, Stream
from blitz_client._requests import DecisionLike, SourceLike, TurnOptions
from blitz_client._sync_hook_calls import BlockingHookCalls
from blitz_client._sync_schedule_calls import BlockingScheduleCalls
from blitz_client._sync_webhook_calls import BlockingWebhookCalls

__all__ = ["Blitz", "Stream"]


class Blitz(BlockingWebhookCalls, BlockingScheduleCalls, BlockingHookCalls):
    """A blocking client of a Blitz server: `AsyncBlitz`'s methods, without `await`.

    Args are as for `AsyncBlitz`. Use it as `with Blitz(url) as blitz:`.
    """

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        reconnect_timeout: float = 30.0,
    ) -> None:
        self._runner = Loop()
        self._closed = False
        self._client = AsyncBlitz(
            url, token=token, ca_file=ca_file, reconnect_timeout=reconnect_timeout
        )

    @property
    def url(self) -> str:
        """The address in use now: the first given, until its server went away."""
        return self._client.url

    @property
    def urls(self) -> tuple[str, ...]:
        """Every address given, in order."""
        return self._client.urls

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection and the client's event loop (again: nothing happens)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self._client.close())
        finally:
            self._runner.close()

    # Sessions

    def create_session(
        self,
        *,
        title: str = "",
        workspace: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        approval_timeout: float | timedelta | None = None,
        agent: str = "",
        source: SourceLike | None = None,
    ) -> session_pb2.Session:
        """A new session (cloned from `source`, a repository); see
        `AsyncBlitz.create_session`."""
        return self._runner.run(
            self._client.create_session(
                title=title,
                workspace=workspace,
                model=model,
                labels=labels,
                approval_timeout=approval_timeout,
                agent=agent,
                source=source,
            )
        )

    def server_info(self) -> session_pb2.ServerInfo:
        """What the server is and speaks. See `AsyncBlitz.server_info`."""
        return self._runner.run(self._client.server_info())

    def session(self, session_id: str) -> session_pb2.Session:
        """One session, with its open requests."""
        return self._runner.run(self._client.session(session_id))

    def sessions(
        self,
        *,
        state: str | int | None = None,
        labels: Mapping[str, str] | None = None,
        page_size: int = 0,
    ) -> Stream[session_pb2.Session]:
        """Every session, newest first, a page at a time."""
        return self._stream(self._client.sessions(state=state, labels=labels, page_size=page_size))

    def close_session(self, session_id: str) -> session_pb2.Session:
        """Close a session."""
        return self._runner.run(self._client.close_session(session_id))

    def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
        approval_timeout: float | timedelta | Literal["default"] | None = None,
        mode: str | int | None = None,
    ) -> session_pb2.Session:
        """Change what is given; see `AsyncBlitz.update_session`."""
        return self._runner.run(
            self._client.update_session(
                session_id,
                title=title,
                labels=labels,
                approval_timeout=approval_timeout,
                mode=mode,
            )
        )

    def delete_session(self, session_id: str) -> bool:
        """Delete a session; see `AsyncBlitz.delete_session`."""
        return self._runner.run(self._client.delete_session(session_id))

    def fork_session(
        self, session_id: str, turn_id: str, *, title: str = ""
    ) -> session_pb2.Session:
        """Fork a session at a finished turn; see `AsyncBlitz.fork_session`."""
        return self._runner.run(self._client.fork_session(session_id, turn_id, title=title))

    def rewind(
        self, session_id: str, to_turn_id: str, *, files: bool = False
    ) -> session_pb2.RewindSessionResponse:
        """Take an idle session back to a finished turn; see `AsyncBlitz.rewind`."""
        return self._runner.run(self._client.rewind(session_id, to_turn_id, files=files))

    def list_turns(self, session_id: str, *, page_size: int = 0) -> Stream[session_pb2.TurnSummary]:
        """Every turn of the session, oldest first, a page at a time."""
        return self._stream(self._client.list_turns(session_id, page_size=page_size))

    # Turns

    def run(
        self,
        session_id: str,
        text: str = "",
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> Stream[turn_pb2.TurnEvent]:
        """Run one turn; its events, the last being `finished`. See `AsyncBlitz.run`."""
        return self._stream(
            self._client.run(session_id, text, turn_id=turn_id, busy=busy, **options)
        )

    def run_workflow(
        self,
        session_id: str,
        name: str,
        params: Mapping[str, object] | None = None,
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> Stream[turn_pb2.TurnEvent]:
        """Run a workflow as one turn; its events. See `AsyncBlitz.run_workflow`."""
        return self._stream(
            self._client.run_workflow(
                session_id, name, params, turn_id=turn_id, busy=busy, **options
            )
        )

    def workflows(self, session_id: str) -> list[workflow_pb2.Workflow]:
        """The workflows the session can run. See `AsyncBlitz.workflows`."""
        return self._runner.run(self._client.workflows(session_id))

    def workflow(self, session_id: str, name: str) -> workflow_pb2.Workflow:
        """One workflow with its definition. See `AsyncBlitz.workflow`."""
        return self._runner.run(self._client.workflow(session_id, name))

    def follow_turn(
        self, session_id: str, turn_id: str, *, after_seq: int = 0
    ) -> Stream[turn_pb2.TurnEvent]:
        """One turn's events after `after_seq` until its `finished`."""
        return self._stream(self._client.follow_turn(session_id, turn_id, after_seq=after_seq))

    def watch(
        self, session_id: str, *, after_seq: int = 0, follow: bool = True
    ) -> Stream[turn_pb2.TurnEvent]:
        """The session's events after `after_seq`; with `follow`, live ones too."""
        return self._stream(self._client.watch(session_id, after_seq=after_seq, follow=follow))

    # Interaction

    def accept_plan(
        self, session_id: str, plan_id: str, text: str = "", *, turn_id: str | None = None
    ) -> Stream[turn_pb2.TurnEvent]:
        """Carry out a proposed plan; its turn's events. See `AsyncBlitz.accept_plan`."""
        return self._stream(self._client.accept_plan(session_id, plan_id, text, turn_id=turn_id))

    def reject_plan(self, session_id: str, plan_id: str, feedback: str = "") -> None:
        """Reject a proposed plan, with feedback for the model's next turn."""
        self._runner.run(self._client.reject_plan(session_id, plan_id, feedback))

    def decide(
        self,
        session_id: str,
        request_id: str,
        decision: DecisionLike,
        *,
        reason: str = "",
        command: str = "",
        interrupt: bool = False,
        rule: turn_pb2.RuleMatch | None = None,
    ) -> None:
        """Answer an approval request: "once", "session", "always" or "deny" (with
        `interrupt`: and stop the turn; with `rule`: make that rule). See
        `AsyncBlitz.decide`."""
        self._runner.run(
            self._client.decide(
                session_id,
                request_id,
                decision,
                reason=reason,
                command=command,
                interrupt=interrupt,
                rule=rule,
            )
        )

    def answer(
        self,
        session_id: str,
        request_id: str,
        answers: str | Sequence[str] = (),
        *,
        values: Mapping[str, Any] | None = None,
        decline: bool = False,
    ) -> None:
        """Answer a question (a form's with `values` or `decline`)."""
        self._runner.run(
            self._client.answer(session_id, request_id, answers, values=values, decline=decline)
        )

    def commands(self, session_id: str = "") -> list[session_pb2.SlashCommand]:
        """The server commands offered; see `AsyncBlitz.commands`."""
        return self._runner.run(self._client.commands(session_id))

    def cancel(self, session_id: str, turn_id: str = "") -> str:
        """Cancel the running turn; returns its id."""
        return self._runner.run(self._client.cancel(session_id, turn_id))

    def steer(self, session_id: str, text: str, *, expected_turn_id: str = "") -> str:
        """Queue text for the running turn; returns its id. See `AsyncBlitz.steer`."""
        return self._runner.run(
            self._client.steer(session_id, text, expected_turn_id=expected_turn_id)
        )

    def usage(self, session_id: str) -> session_pb2.UsageReport:
        """The session's usage ledger."""
        return self._runner.run(self._client.usage(session_id))

    def rules(self, session_id: str) -> list[session_pb2.Rule]:
        """The approval rules that apply in the session."""
        return self._runner.run(self._client.rules(session_id))

    def revoke_rule(self, session_id: str, rule_id: str) -> None:
        """Remove a rule."""
        self._runner.run(self._client.revoke_rule(session_id, rule_id))

    # Workspace

    def upload_image(
        self, session_id: str, data: bytes, media_type: str
    ) -> workspace_pb2.UploadImageResponse:
        """Store an image for a turn's `image_ids`; see `AsyncBlitz.upload_image`."""
        return self._runner.run(self._client.upload_image(session_id, data, media_type))

    def list_files(self, session_id: str, path: str = "") -> list[workspace_pb2.FileEntry]:
        """The entries of one folder of the session's workspace ("": its root)."""
        return self._runner.run(self._client.list_files(session_id, path))

    def read_file(self, session_id: str, path: str) -> workspace_pb2.ReadFileResponse:
        """One file of the session's workspace; see `AsyncBlitz.read_file`."""
        return self._runner.run(self._client.read_file(session_id, path))

    def diff(self, session_id: str, *, turn_id: str = "") -> workspace_pb2.GetDiffResponse:
        """What changed in the session (or in one turn); see `AsyncBlitz.diff`."""
        return self._runner.run(self._client.diff(session_id, turn_id=turn_id))

    def export_changes(
        self,
        session_id: str,
        format: str | int = "patch",
        *,
        branch: str = "",
        message: str = "",
        squash: bool = False,
    ) -> workspace_pb2.ExportChangesResponse:
        """A session from a repository's changes as a patch series, a diff, a bundle or a
        push; see `AsyncBlitz.export_changes`."""
        return self._runner.run(
            self._client.export_changes(
                session_id, format, branch=branch, message=message, squash=squash
            )
        )
