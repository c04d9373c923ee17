"""SessionService's sessions of the asyncio client: what the server is, and each session's
life (made, read, listed, changed, forked, rewound, closed, deleted) and its turns' list.
`AsyncBlitz` is made of these and its other calls (`_calls.py`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from datetime import timedelta
from typing import Literal

from blitz.v1 import session_pb2
from blitz_client._calls import Calls
from blitz_client._requests import SourceLike, duration, mode_value, source_value, state_value

__all__ = ["SessionCalls"]


class SessionCalls(Calls):
    """The server's info and the sessions' calls of `AsyncBlitz`."""

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
        agent: str = "",
        source: SourceLike | None = None,
    ) -> session_pb2.Session:
        """A new session. Empty `model`/`workspace`: the server's default / a new folder.

        `agent`: the agent that serves its turns, one of `server_info().agents` ("blitz",
        the built-in one, or a declared ACP agent, docs/agents.md); empty: the server's
        default. An ACP agent takes no `model` (its operator configured one).

        `source`: a repository the server clones into the new session's workspace before
        answering (no `workspace` then): a `RepositorySource`, or "URL" / "URL@REF" (a
        branch, tag or commit; see `repository_source`). The session's `repository` says
        at which `commit` it starts. A source the operator does not allow is
        INVALID_ARGUMENT on `source.url` (`server_info().repositories`: whether any is)."""
        request = session_pb2.CreateSessionRequest(
            title=title,
            workspace=workspace,
            model=model,
            labels=dict(labels or {}),
            agent=agent,
        )
        if source is not None:
            request.source.CopyFrom(source_value(source))
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
