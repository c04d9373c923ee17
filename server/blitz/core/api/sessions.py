"""The session lifecycle calls of SessionService: create, get, list, update, close, delete, fork.

`SessionCalls` is the part of `SessionCore` (service.py) that keeps sessions themselves:
each call checks its request (`validation.py`), finds the caller's session (another
principal's is not found: its existence is not revealed), acts through the store, the
session's folder (for a fork, put back as it was at its turn: `checkpoints.py`) and, to
close a session, the turn driver, and answers with `views.py`'s views. Turns and their
requests are the core's other calls (`service.py`, `decisions.py`, `rewind.py`).
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import structlog

from blitz.config.agents import ACP_MODEL_PREFIX, BUILTIN_AGENT, acp_agent_of
from blitz.core.api import validation as check
from blitz.core.api.pages import fill_page
from blitz.core.api.repository_sessions import clone_into, ready_notice, source_of
from blitz.core.api.rewind import forkable_turn, refuse_acp, unrestored_notice
from blitz.core.api.server_info import ServerFacts
from blitz.core.api.session_folders import copy_workspace, is_own_folder, remove_workspace
from blitz.core.api.views import session_view
from blitz.core.driver.turns import Turns
from blitz.core.events.event_log import EventLog
from blitz.core.events.session_feed import SessionFeed
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.locks import SessionLocks
from blitz.core.repository import repo_error
from blitz.core.usage import session_usage
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace
from blitz.ports import AgentPort, CallContext
from blitz.repos import RepoError, Repositories
from blitz.store import (
    SessionChange,
    SessionQuery,
    SessionRecord,
    Store,
    TurnRecord,
    TurnState,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["SessionCalls"]

log = structlog.get_logger(__name__)


class SessionCalls:
    """The session lifecycle calls; `SessionCore` holds what they use."""

    _store: Store
    _agent: AgentPort
    _log: EventLog
    _locks: SessionLocks
    _turns: Turns
    _checkpoints: Checkpoints
    _workspace_root: Path
    _default_model: str
    _facts: ServerFacts
    # Whether sessions and turns may ask for the bypass mode (--allow-bypass-mode).
    _bypass_allowed: bool
    # Sessions from a repository (None: the server allows none).
    _repos: Repositories | None
    # WatchSessions' marks of the sessions that change without an event.
    _feed: SessionFeed

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        """The caller's session, or SESSION_NOT_FOUND (for the workspace service too)."""
        check.require(session_id, "session_id")
        rec = await self._store.get_session(session_id)
        # Another principal's session is not found: its existence is not revealed.
        if rec is None or (rec.owner != ctx.caller and not ctx.admin):
            raise BlitzError(
                Reason.SESSION_NOT_FOUND, f"no session {session_id!r}", {"session_id": session_id}
            )
        return rec

    async def _view(self, rec: SessionRecord) -> s.Session:
        return session_view(
            rec,
            usage=await session_usage(self._store, rec.id),
            pending=await self._store.list_pending(rec.id),
            queued=[q.turn_id for q in await self._store.queued_turns(rec.id)],
        )

    async def _workspace_folder(self, name: str, session_id: str, ctx: CallContext) -> str:
        """The folder of the workspace a new session names, below the workspace root.

        No name: the session's own folder, its id. Where calls have no principal (a server
        without tokens), the name is the folder. Otherwise a name is the caller's own: the
        folder it was first given (`Store.workspace_folder`), or, the first time, one in
        the caller's own folder (`@alice/NAME`). Another principal naming the same name
        gets a folder of its own, the same answer as for a name nobody used. An admin may
        name a principal's folder itself (`@alice/NAME`).
        """
        if not name:
            return session_id
        name = check.workspace_name(
            name, session_id=session_id, root=self._workspace_root, admin=ctx.admin
        )
        if not ctx.caller or name.startswith("@"):
            return name
        return await self._store.workspace_folder(ctx.caller, name, new=f"@{ctx.caller}/{name}")

    async def create_session(self, req: s.CreateSessionRequest, ctx: CallContext) -> s.Session:
        approval_timeout = check.session_settings(req, bypass_allowed=self._bypass_allowed)
        model = self._model_of(req)
        source = source_of(req, self._repos)
        session_id = "s_" + uuid.uuid4().hex
        workspace = await self._workspace_folder(req.workspace, session_id, ctx)
        try:
            # Made folder by folder, none through a link: a link another session left
            # cannot widen this one's workspace to wherever it leads.
            folder = await FILE_CALLS.run(
                Workspace.named, self._workspace_root, workspace, create=True
            )
        except PathRefused as exc:
            raise invalid_argument("workspace", str(exc)) from None
        except NotADirectoryError:
            raise invalid_argument(
                "workspace", f"workspace {workspace!r} passes through a file, not a folder"
            ) from None
        except CallTimedOut:
            raise BlitzError(
                Reason.INTERNAL, "the workspace's folder could not be made in time"
            ) from None
        repository = notice = None
        if source is not None:
            assert self._repos is not None  # source_of refuses a source without them
            try:
                repository, cloned = await clone_into(
                    self._repos, session_id, source, folder.root, principal=ctx.caller
                )
            except BaseException:
                await self._drop_folder(session_id, workspace)
                raise
            notice = ready_notice(repository, cloned)
            log.info("session_cloned", session_id=session_id, url=source.url, commit=cloned.commit)
        now = time.time()
        rec = SessionRecord(
            id=session_id,
            owner=ctx.caller,
            title=req.title,
            workspace=workspace,
            model=model,
            labels=dict(req.labels),
            state=s.SESSION_STATE_IDLE,
            create_time=now,
            update_time=now,
            approval_timeout=approval_timeout,
            mode=req.mode or t.SESSION_MODE_ASK,
            repository=repository.SerializeToString() if repository is not None else None,
        )
        await self._store.create_session(rec)
        self._feed.changed(session_id)
        if notice is not None:
            # Said in the session's log, for whoever opens it: ready, and at which commit.
            await self._log.commit(session_id, "", t.TurnEvent(notice=t.Notice(text=notice)))
            rec = await self.session_record(session_id, ctx)
        return await self._view(rec)

    async def _drop_folder(self, session_id: str, workspace: str) -> None:
        """Remove the folder and git data of a session that was never made."""
        if self._repos is not None:
            await self._repos.remove(session_id)
        if is_own_folder(workspace, session_id):
            try:
                await FILE_CALLS.run(remove_workspace, self._workspace_root, workspace)
            except (OSError, PathRefused, CallTimedOut) as exc:
                log.warning("workspace_not_removed", session_id=session_id, error=str(exc))

    def _model_of(self, req: s.CreateSessionRequest) -> str:
        """The new session's model: its agent's ("acp:NAME") or the built-in agent's."""
        facts = self._facts
        agent = req.agent or facts.default_agent
        names = [info.name for info in facts.agents()]
        if agent not in names:
            raise invalid_argument(
                "agent", f"no agent {agent[:64]!r} on this server", accepted=",".join(names)
            )
        if agent == BUILTIN_AGENT:
            model = req.model or self._default_model
            if acp_agent_of(model):
                raise invalid_argument("model", "name an ACP agent with `agent`, not `model`")
            self._agent.validate_model(model)
            return model
        if req.model:
            raise invalid_argument(
                "model",
                f"the agent {agent!r} uses the model its operator configured: leave model empty",
                agent=agent,
            )
        return ACP_MODEL_PREFIX + agent

    async def get_session(self, req: s.GetSessionRequest, ctx: CallContext) -> s.Session:
        check.require(req.session_id, "session_id")
        # Under the lock: a turn parking or finishing is seen before or after, not halfway.
        async with self._locks(req.session_id):
            return await self._view(await self.session_record(req.session_id, ctx))

    async def list_sessions(
        self, req: s.ListSessionsRequest, ctx: CallContext
    ) -> s.ListSessionsResponse:
        size, before = check.session_page(req)
        recs = await self._store.list_sessions(
            SessionQuery(
                owner=None if ctx.admin else ctx.caller,
                state=req.state,
                labels=dict(req.labels),
                limit=size + 1,
                before=before,
            )
        )
        resp = s.ListSessionsResponse()
        resp.next_page_token = await fill_page(recs, size, self._view, resp.sessions)
        return resp

    async def close_session(self, req: s.CloseSessionRequest, ctx: CallContext) -> s.Session:
        rec = await self.session_record(req.session_id, ctx)
        if rec.state != s.SESSION_STATE_CLOSED:
            async with self._locks(rec.id):
                await self._store.update_session(
                    rec.id, SessionChange(update_time=time.time(), state=s.SESSION_STATE_CLOSED)
                )
                rec = await self.session_record(req.session_id, ctx)
            # Its main turn and its asides, wherever they run.
            unfinished = await self._store.turns_in_state(TurnState.RUNNING, session_id=rec.id)
            turn_ids = {rec.turn_id} if rec.turn_id else set()
            turn_ids |= {turn.turn_id for turn in unfinished}
            closed_error = BlitzError(Reason.CANCELLED, "the session was closed")
            for turn_id in sorted(turn_ids):
                await self._turns.cancel_turn(rec, turn_id, closed_error)
            # Its queue: none of them starts in a closed session, so each ends here.
            for queued in await self._store.queued_turns(rec.id):
                await self._turns.end_queued(rec.id, queued.turn_id, closed_error)
            # After its turns' `finished`: a following Watch ends with this event.
            closed = t.SessionStateChange(state=t.SessionStateChange.STATE_CLOSED, reason="closed")
            await self._log.commit(rec.id, "", t.TurnEvent(session_state=closed))
        return await self._view(await self.session_record(req.session_id, ctx))

    async def update_session(self, req: s.UpdateSessionRequest, ctx: CallContext) -> s.Session:
        change = check.session_update(req, now=time.time(), bypass_allowed=self._bypass_allowed)
        async with self._locks(req.session_id):
            rec = await self.session_record(req.session_id, ctx)
            await self._store.update_session(rec.id, change)
            self._feed.changed(rec.id)
            return await self._view(await self.session_record(rec.id, ctx))

    async def delete_session(
        self, req: s.DeleteSessionRequest, ctx: CallContext
    ) -> s.DeleteSessionResponse:
        """Close the session if it is idle, then delete it; SESSION_BUSY while a turn runs
        or is parked (the main turn or an aside)."""
        check.require(req.session_id, "session_id")
        async with self._locks(req.session_id):
            rec = await self.session_record(req.session_id, ctx)
            running = await self._store.turns_in_state(TurnState.RUNNING, session_id=rec.id)
            busy = rec.turn_id or (running[0].turn_id if running else "")
            # Closed first, if idle, in one step: no turn can start in it from here on.
            closing = SessionChange(
                update_time=time.time(),
                state=s.SESSION_STATE_CLOSED,
                expect_state=s.SESSION_STATE_IDLE,
            )
            if not busy and rec.state != s.SESSION_STATE_CLOSED:
                if not await self._store.update_session(rec.id, closing):
                    busy = (await self.session_record(rec.id, ctx)).turn_id or "?"
                else:
                    # Its watchers end cleanly, as on CloseSession, before the log goes.
                    closed = t.SessionStateChange(
                        state=t.SessionStateChange.STATE_CLOSED, reason="deleted"
                    )
                    await self._log.commit(rec.id, "", t.TurnEvent(session_state=closed))
            if busy:
                raise BlitzError(
                    Reason.SESSION_BUSY,
                    "a turn is running or parked in this session: cancel it or close the "
                    "session first",
                    {"turn_id": busy},
                )
            await self._store.delete_session(rec.id)
        self._feed.changed(rec.id)
        removed = False
        if self._repos is not None and rec.repository:
            await self._repos.remove(rec.id)
        if is_own_folder(rec.workspace, rec.id):
            try:
                removed = await FILE_CALLS.run(
                    remove_workspace, self._workspace_root, rec.workspace
                )
            except (OSError, PathRefused, CallTimedOut) as exc:
                # The records are gone: the folder is only left behind, and said so.
                log.warning("workspace_not_removed", session_id=rec.id, error=str(exc))
        return s.DeleteSessionResponse(workspace_deleted=removed)

    async def fork_session(self, req: s.ForkSessionRequest, ctx: CallContext) -> s.Session:
        """A new session with the history the turn left and a copy of the workspace with
        the files as they were at that turn (where checkpoints allow: notices say)."""
        check.check_fork(req)
        source = await self.session_record(req.session_id, ctx)
        refuse_acp(source, "forked")
        turn, history = await forkable_turn(
            self._store, source.id, req.turn_id, field="turn_id", verb="forked at"
        )
        fork_id = "s_" + uuid.uuid4().hex
        abandoned = threading.Event()
        try:
            skipped = await FILE_CALLS.run(
                copy_workspace, self._workspace_root, source.workspace, fork_id, abandoned
            )
        except CallTimedOut:
            abandoned.set()  # the copy stops at its next folder and removes what it made
            raise BlitzError(Reason.INTERNAL, "the workspace could not be copied in time") from None
        except (OSError, PathRefused) as exc:
            log.warning("workspace_not_copied", session_id=source.id, error=str(exc))
            raise BlitzError(
                Reason.FILE_NOT_FOUND,
                "the session's workspace could not be copied",
                {"path": source.workspace},
            ) from None
        now = time.time()
        rec = SessionRecord(
            id=fork_id,
            owner=source.owner,
            title=req.title or f"fork of {source.title or source.id}"[:500],
            workspace=fork_id,
            model=source.model,
            labels=dict(source.labels),
            state=s.SESSION_STATE_IDLE,
            create_time=now,
            update_time=now,
            approval_timeout=source.approval_timeout,
            mode=source.mode,
            repository=source.repository,
        )
        if source.repository and self._repos is not None:
            try:
                # The fork's own git data: the same origin and start, its commits up to
                # the turn it is forked at.
                await self._repos.fork(source.id, fork_id, at_turn=turn.turn_id)
            except RepoError as exc:
                await self._drop_folder(fork_id, fork_id)
                raise repo_error(exc) from None
        await self._store.create_session(rec)
        self._feed.changed(fork_id)
        if history:
            await self._store.set_history(fork_id, history)
        # Said in the fork's log, for whoever opens it: where its files are not all as
        # they were at the turn.
        notices = await self._files_at_turn(source, turn, fork_id)
        if skipped:
            shown = ", ".join(skipped[:20]) + (" …" if len(skipped) > 20 else "")
            notices.append(
                f"Left out of this fork's workspace: {len(skipped)} special or"
                f" hard-linked files, which may be files outside the workspace ({shown})."
            )
        for text in notices:
            await self._log.commit(fork_id, "", t.TurnEvent(notice=t.Notice(text=text)))
        if notices:
            rec = await self.session_record(fork_id, ctx)
        return await self._view(rec)

    async def _files_at_turn(
        self, source: SessionRecord, turn: TurnRecord, fork_id: str
    ) -> list[str]:
        """Put the fork's copy of the workspace back as it was at `turn`, as a rewind
        would; what its notices say of it."""
        since = await self._checkpoints.since(source, turn)
        if since.unknown:
            return [
                f"This fork's files are the workspace's as it was when it was forked, not as"
                f" at turn {turn.turn_id}: {len(since.unknown)} later turns have no"
                f" checkpoint of the workspace ({', '.join(since.unknown[:20])})."
            ]
        if not since.plan:
            return []
        restored = await self._checkpoints.put_back(
            workspace=fork_id, blobs_of=source.id, plan=since.plan
        )
        notices = [unrestored_notice(restored)] if restored.unrestored else []
        if since.partial:
            notices.append(
                "Some checkpoints of the later turns were partial: this fork's files may"
                " hold changes made after the turn it was forked at."
            )
        return notices
