"""`AsyncBlitz`: the asyncio client, one method per call of SessionService, WorkspaceService,
WorkflowService and (`_webhook_calls.py`) WebhookService.

Each method builds its request from Python values (`_requests.py`), sends it through the
transport the URL picked (`_transport.py`) and returns the reply's useful part; pages are
fetched as they are read. What happens when the server goes away, a call sent again or a
dropped stream resumed without a duplicate, on the same address or the next one
(`_addresses.py`), is `_resume.py`'s: every call goes through the client's `Resumer`.
Nothing here reads the environment or retries on its own.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, Unpack

from blitz.v1 import session_pb2, turn_pb2, workflow_pb2, workspace_pb2
from blitz_client._addresses import Addresses, parse_addresses
from blitz_client._requests import (
    DecisionLike,
    TurnOptions,
    build_turn,
    busy_value,
    decision_value,
    duration,
    mode_value,
    state_value,
)
from blitz_client._resume import Resumer, StreamOpener
from blitz_client._transport import Transport, open_transport
from blitz_client._webhook_calls import WEBHOOK_EVENTS, WebhookCalls

__all__ = ["DEFAULT_URL", "WEBHOOK_EVENTS", "AsyncBlitz"]

DEFAULT_URL = "127.0.0.1:50051"
"""`blitz serve`'s gRPC address with its default flags."""

# What can travel in an `authorization: Bearer` header (RFC 6750 asks for less).
_TOKEN = re.compile(r"[!-~]+")


class AsyncBlitz(WebhookCalls):
    """An asyncio client of a Blitz server, over gRPC or Connect.

    Args:
        url: `http://host:port` or `https://…` (Connect, the server's HTTP port), or
            `host:port`, `grpc://host:port`, `grpcs://host:port` (gRPC). Default: the
            local server's gRPC port. For several replicas, a sequence of addresses or one
            string of them separated by commas, all Connect URLs or all gRPC targets
            (ValueError otherwise): the client uses one at a time, the first to begin
            with, and moves on to the next when its server is gone or leaving.
        token: sent as `authorization: Bearer TOKEN` on every call (ValueError unless it
            is printable ASCII without spaces).
        ca_file: a PEM file of the certificate authorities that a TLS server's certificate
            (`https://`, `grpcs://`) must chain to; default: the system's.
        reconnect_timeout: how long, in seconds, a dropped stream keeps trying to resume,
            and a call refused by a server that is shutting down keeps being sent again,
            before the last error is raised.

    `url` is the address in use now, and `urls` all of them, in the order given.

    Use it as `async with AsyncBlitz(url) as blitz:`; it must be opened inside the event
    loop that uses it.
    """

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        *,
        token: str | None = None,
        ca_file: str | None = None,
        reconnect_timeout: float = 30.0,
    ) -> None:
        if token is not None and not _TOKEN.fullmatch(token):
            raise ValueError("token must be printable ASCII, without spaces")
        addresses = parse_addresses(url)
        ca = Path(ca_file).read_bytes() if ca_file else None

        def open_one(address: str) -> Transport:
            return open_transport(address, token=token, ca=ca)

        # Transports are opened on first use, so that a channel binds to the loop using it.
        self._addresses = Addresses(addresses, open_transport=open_one)
        self._resume = Resumer(self._addresses, reconnect_timeout=reconnect_timeout)

    @property
    def url(self) -> str:
        """The address in use now: the first given, until its server went away."""
        return self._addresses.current

    @property
    def urls(self) -> tuple[str, ...]:
        """Every address given, in order."""
        return self._addresses.all

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections; open streams end."""
        await self._addresses.close()

    async def _unary(self, method: str, request: Any) -> Any:
        """One call, sent again (maybe elsewhere) where `_resume.py` finds it safe."""
        return await self._resume.call(method, lambda t: t.unary(method, request))

    # The server

    async def server_info(self) -> session_pb2.ServerInfo:
        """What the server is and speaks: protocol revision, version, models, limits and
        features. Call it first to check that the server has what you need."""
        result: session_pb2.ServerInfo = await self._unary(
            "GetServerInfo", session_pb2.GetServerInfoRequest()
        )
        return result

    # Sessions

    async def create_session(
        self,
        *,
        title: str = "",
        workspace: str = "",
        model: str = "",
        labels: Mapping[str, str] | None = None,
        approval_timeout: float | timedelta | None = None,
    ) -> session_pb2.Session:
        """A new session. Empty `model`/`workspace`: the server's default / a new folder."""
        request = session_pb2.CreateSessionRequest(
            title=title, workspace=workspace, model=model, labels=dict(labels or {})
        )
        if approval_timeout is not None:
            request.approval_timeout.CopyFrom(duration(approval_timeout))
        result: session_pb2.Session = await self._unary("CreateSession", request)
        return result

    async def session(self, session_id: str) -> session_pb2.Session:
        """One session, with its state, usage and open requests (`pending`)."""
        request = session_pb2.GetSessionRequest(session_id=session_id)
        result: session_pb2.Session = await self._unary("GetSession", request)
        return result

    async def sessions(
        self,
        *,
        state: str | int | None = None,
        labels: Mapping[str, str] | None = None,
        page_size: int = 0,
    ) -> AsyncGenerator[session_pb2.Session, None]:
        """Every session, newest first, fetched a page at a time.

        `state`: "idle", "running", "parked", "closed" or a SessionState value.
        """
        wanted = state_value(state)
        token = ""
        while True:
            request = session_pb2.ListSessionsRequest(
                page_size=page_size,
                page_token=token,
                state=wanted,  # type: ignore[arg-type]  # an int is a valid enum value
                labels=dict(labels or {}),
            )
            page: session_pb2.ListSessionsResponse = await self._unary("ListSessions", request)
            for session in page.sessions:
                yield session
            token = page.next_page_token
            if not token:
                return

    async def close_session(self, session_id: str) -> session_pb2.Session:
        """Close a session: its running turn is cancelled and later turns fail."""
        request = session_pb2.CloseSessionRequest(session_id=session_id)
        result: session_pb2.Session = await self._unary("CloseSession", request)
        return result

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | None = None,
        labels: Mapping[str, str] | None = None,
        approval_timeout: float | timedelta | Literal["default"] | None = None,
        mode: str | int | None = None,
    ) -> session_pb2.Session:
        """Change what is given, leave the rest: `labels` replaces them whole, and
        `approval_timeout="default"` goes back to the server's default; `mode` is "ask",
        "accept_edits", "read_only", "plan" or "bypass". The session as it now is."""
        request = session_pb2.UpdateSessionRequest(session_id=session_id)
        if title is not None:
            request.title = title
            request.update_mask.paths.append("title")
        if labels is not None:
            request.labels.update(labels)
            request.update_mask.paths.append("labels")
        if approval_timeout is not None:
            if approval_timeout != "default":
                request.approval_timeout.CopyFrom(duration(approval_timeout))
            request.update_mask.paths.append("approval_timeout")
        if mode is not None:
            request.mode = mode_value(mode)  # type: ignore[assignment]  # a valid enum int
            request.update_mask.paths.append("mode")
        result: session_pb2.Session = await self._unary("UpdateSession", request)
        return result

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session with no running or parked turn (SESSION_BUSY otherwise) and
        its records; returns whether its own workspace folder was deleted too (a named
        workspace is left as it is)."""
        request = session_pb2.DeleteSessionRequest(session_id=session_id)
        response: session_pb2.DeleteSessionResponse = await self._unary("DeleteSession", request)
        return response.workspace_deleted

    async def fork_session(
        self, session_id: str, turn_id: str, *, title: str = ""
    ) -> session_pb2.Session:
        """A new session starting from the history as `turn_id` (finished) left it, in a
        copy of the workspace with the files as they were at that turn. Empty `title`:
        "fork of …"."""
        request = session_pb2.ForkSessionRequest(
            session_id=session_id, turn_id=turn_id, title=title
        )
        result: session_pb2.Session = await self._unary("ForkSession", request)
        return result

    async def rewind(
        self, session_id: str, to_turn_id: str, *, files: bool = False
    ) -> session_pb2.RewindSessionResponse:
        """Take an idle session back to one of its finished turns: the model's history
        becomes that turn's, and with `files` the workspace files the later turns changed
        are put back as they were then. The `rewound` event (what was dropped, restored
        and not restored) and the session after it."""
        request = session_pb2.RewindSessionRequest(
            session_id=session_id, to_turn_id=to_turn_id, files=files
        )
        result: session_pb2.RewindSessionResponse = await self._unary("RewindSession", request)
        return result

    async def list_turns(
        self, session_id: str, *, page_size: int = 0
    ) -> AsyncGenerator[session_pb2.TurnSummary, None]:
        """Every turn of the session, oldest first, fetched a page at a time: its request
        (`turn`), `state`, times, `usage`, and once finished its `output` or `error`."""
        token = ""
        while True:
            request = session_pb2.ListTurnsRequest(
                session_id=session_id, page_size=page_size, page_token=token
            )
            page: session_pb2.ListTurnsResponse = await self._unary("ListTurns", request)
            for turn in page.turns:
                yield turn
            token = page.next_page_token
            if not token:
                return

    # Turns

    async def run(
        self,
        session_id: str,
        text: str = "",
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Run one turn; yields its events, the last being `finished`.

        The options are the Turn's fields (`plan`, `read_only`, `timeout`, ... see
        `TurnOptions`). `turn_id` is the idempotency key; one is made up when omitted, so
        that a dropped stream is resumed without starting a second turn. `busy`: what to do
        when the session has a turn already: "reject" (SESSION_BUSY), "enqueue" (wait for
        it, queued) or "interrupt" (cancel it). A failed turn is not an exception: its
        `finished.error` says why. Calls that fail before the turn starts (SESSION_BUSY,
        INVALID_ARGUMENT, ...) raise BlitzError.
        """
        request = session_pb2.RunTurnRequest(
            session_id=session_id,
            turn=build_turn(text, **options),
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
            busy=busy_value(busy),  # type: ignore[arg-type]
        )

        async for event in self._turn("RunTurn", request, session_id, request.turn_id):
            yield event

    async def run_workflow(
        self,
        session_id: str,
        name: str,
        params: Mapping[str, object] | None = None,
        *,
        turn_id: str | None = None,
        busy: str | int = "reject",
        **options: Unpack[TurnOptions],
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Run the workflow `name` (docs/workflows.md) as one turn; yields its events as
        `run` does, `flow_step` events among them, the last being `finished`. `params` are
        sent as text (True as "true"); the options are the run's turn options (`timeout`,
        `max_cost_usd`, `max_turns`, `mode`, `read_only`, `fetch_grants`). A broken
        definition or bad params raise BlitzError (INVALID_ARGUMENT) before the run starts."""
        given = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (params or {}).items()
        }
        request = workflow_pb2.RunWorkflowRequest(
            session_id=session_id,
            name=name,
            params=given,
            turn=build_turn("", **options),
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
            busy=busy_value(busy),  # type: ignore[arg-type]
        )
        async for event in self._turn("RunWorkflow", request, session_id, request.turn_id):
            yield event

    async def workflows(self, session_id: str) -> list[workflow_pb2.Workflow]:
        """The workflows the session can run, by name; a broken file with its `error`."""
        request = workflow_pb2.ListWorkflowsRequest(session_id=session_id)
        reply = await self._unary("ListWorkflows", request)
        return list(reply.workflows)

    async def workflow(self, session_id: str, name: str) -> workflow_pb2.Workflow:
        """One workflow with its definition; BlitzError (INVALID_ARGUMENT) when broken."""
        request = workflow_pb2.GetWorkflowRequest(session_id=session_id, name=name)
        return await self._unary("GetWorkflow", request)  # type: ignore[no-any-return]

    async def accept_plan(
        self, session_id: str, plan_id: str, text: str = "", *, turn_id: str | None = None
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Carry out the proposed plan `plan_id` (a `plan_proposed` event's): the turn's
        events, as `run` yields them, resumed the same way after a drop. `text` is sent to
        the model after the plan. NO_PENDING_PLAN (a BlitzError) when that plan is not the
        session's open proposal."""
        request = session_pb2.AcceptPlanRequest(
            session_id=session_id,
            plan_id=plan_id,
            text=text,
            turn_id=turn_id or f"t_{uuid.uuid4().hex}",
        )
        async for event in self._turn("AcceptPlan", request, session_id, request.turn_id):
            yield event

    async def reject_plan(self, session_id: str, plan_id: str, feedback: str = "") -> None:
        """Reject the proposed plan `plan_id`; the model gets `feedback` with the next turn."""
        request = session_pb2.RejectPlanRequest(
            session_id=session_id, plan_id=plan_id, feedback=feedback
        )
        await self._unary("RejectPlan", request)

    async def follow_turn(
        self, session_id: str, turn_id: str, *, after_seq: int = 0
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The events of one turn with seq > `after_seq`, live, until its `finished`.

        How to pick up a turn that another client started, or one whose `run` was
        abandoned (after a Ctrl-C, say).
        """
        watch = self._watcher(session_id, follow=True)
        async for event in self._resume.events(watch, after_seq=after_seq, turn_id=turn_id):
            yield event

    async def watch(
        self, session_id: str, *, after_seq: int = 0, follow: bool = True
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The session's events with seq > `after_seq`; with `follow`, then live ones.

        Without `follow` it ends after the replay. With it, it runs until the consumer
        stops, resuming across dropped connections.
        """
        watch = self._watcher(session_id, follow=follow)
        async for event in self._resume.events(watch, after_seq=after_seq):
            yield event

    def _turn(
        self, method: str, request: Any, session_id: str, turn_id: str
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """The events of the turn that `request` starts (RunTurn, AcceptPlan), resumed."""
        return self._resume.turn(
            lambda t: t.stream(method, request),
            self._watcher(session_id, follow=True),
            turn_id=turn_id,
        )

    def _watcher(self, session_id: str, *, follow: bool) -> StreamOpener:
        """Opens the session's Watch stream after a given seq."""

        def open_stream(t: Transport, after_seq: int) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
            request = session_pb2.WatchRequest(
                session_id=session_id, after_seq=after_seq, follow=follow
            )
            return t.stream("Watch", request)

        return open_stream

    # Interaction

    async def decide(
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
        """Answer an approval request: "once", "session", "always" or "deny".

        `reason` goes to the model on a deny; `command` replaces a COMMAND's command;
        `interrupt` (with "deny" only) also stops the turn, which ends CANCELLED; `rule`
        (with "session" or "always") is the rule to make instead of the exact scope_label,
        the request's `suggested_rule` say.
        """
        request = session_pb2.DecideRequest(
            session_id=session_id,
            request_id=request_id,
            decision=decision_value(decision),  # type: ignore[arg-type]  # a valid enum int
            reason=reason,
            command=command,
            interrupt=interrupt,
        )
        if rule is not None:
            request.rule.CopyFrom(rule)
        await self._unary("Decide", request)

    async def answer(
        self,
        session_id: str,
        request_id: str,
        answers: str | Sequence[str] = (),
        *,
        values: Mapping[str, Any] | None = None,
        decline: bool = False,
    ) -> None:
        """Answer a question: one answer, or several where it is multi-select; a question
        with a `form` takes `values` (an object its schema validates) or `decline`."""
        chosen = [answers] if isinstance(answers, str) else list(answers)
        request = session_pb2.AnswerRequest(
            session_id=session_id, request_id=request_id, answers=chosen, decline=decline
        )
        if values is not None:
            request.values.update(values)
        await self._unary("Answer", request)

    async def commands(self, session_id: str = "") -> list[session_pb2.SlashCommand]:
        """The server commands (`Turn.command`) offered, with the session's own when given."""
        response: session_pb2.ListCommandsResponse = await self._unary(
            "ListCommands", session_pb2.ListCommandsRequest(session_id=session_id)
        )
        return list(response.commands)

    async def cancel(self, session_id: str, turn_id: str = "") -> str:
        """Cancel the running turn (only if it is `turn_id`, when given); returns its id."""
        request = session_pb2.CancelRequest(session_id=session_id, turn_id=turn_id)
        response: session_pb2.CancelResponse = await self._unary("Cancel", request)
        return response.turn_id

    async def steer(self, session_id: str, text: str, *, expected_turn_id: str = "") -> str:
        """Queue `text` for the running turn's next model call; returns the turn's id.
        With `expected_turn_id`, only if that is the session's turn (else TURN_MISMATCH)."""
        request = session_pb2.SteerRequest(
            session_id=session_id, text=text, expected_turn_id=expected_turn_id
        )
        response: session_pb2.SteerResponse = await self._unary("Steer", request)
        return response.turn_id

    async def usage(self, session_id: str) -> session_pb2.UsageReport:
        """The session's ledger: `total` and one entry per model call."""
        request = session_pb2.GetUsageRequest(session_id=session_id)
        result: session_pb2.UsageReport = await self._unary("GetUsage", request)
        return result

    async def rules(self, session_id: str) -> list[session_pb2.Rule]:
        """The approval rules that apply in the session (SESSION and ALWAYS)."""
        request = session_pb2.ListRulesRequest(session_id=session_id)
        response: session_pb2.ListRulesResponse = await self._unary("ListRules", request)
        return list(response.rules)

    async def revoke_rule(self, session_id: str, rule_id: str) -> None:
        """Remove a rule; the actions it covered ask for approval again."""
        request = session_pb2.RevokeRuleRequest(session_id=session_id, rule_id=rule_id)
        await self._unary("RevokeRule", request)

    # Workspace

    async def upload_image(
        self, session_id: str, data: bytes, media_type: str
    ) -> workspace_pb2.UploadImageResponse:
        """Store an image for a later turn's `image_ids`; the reply has its `image_id` and `size`.

        `media_type` is "image/png", "image/jpeg", "image/gif" or "image/webp", and `data`
        must be such an image (the server checks the content) of at most 5 MiB; otherwise
        INVALID_ARGUMENT names the field (`media_type` or `data`).
        """
        request = workspace_pb2.UploadImageRequest(
            session_id=session_id, data=data, media_type=media_type
        )
        result: workspace_pb2.UploadImageResponse = await self._unary("UploadImage", request)
        return result

    async def list_files(self, session_id: str, path: str = "") -> list[workspace_pb2.FileEntry]:
        """The entries of one folder of the session's workspace (`path` relative to it; "":
        its root). Each entry's `path` is relative to the workspace."""
        request = workspace_pb2.ListFilesRequest(session_id=session_id, path=path)
        response: workspace_pb2.ListFilesResponse = await self._unary("ListFiles", request)
        return list(response.entries)

    async def read_file(self, session_id: str, path: str) -> workspace_pb2.ReadFileResponse:
        """One file of the session's workspace: its `content`, `size`, and whether it was
        `truncated` at the server's read cap. A path that leaves the workspace is
        INVALID_ARGUMENT on `path`; a missing file is FILE_NOT_FOUND."""
        request = workspace_pb2.ReadFileRequest(session_id=session_id, path=path)
        result: workspace_pb2.ReadFileResponse = await self._unary("ReadFile", request)
        return result

    async def diff(self, session_id: str) -> workspace_pb2.GetDiffResponse:
        """A unified diff of the files the agent's file tools changed in the session, from
        before its first change of each to now: `diff`, the changed `paths`, and whether
        the diff was `truncated`. Changes made only by commands are not in it."""
        request = workspace_pb2.GetDiffRequest(session_id=session_id)
        result: workspace_pb2.GetDiffResponse = await self._unary("GetDiff", request)
        return result
