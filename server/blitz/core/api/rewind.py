"""RewindSession: an idle session taken back to one of its turns.

`RewindCalls` is the part of `SessionCore` (service.py) that rewinds. The session's
history becomes the history kept for that turn (the store keeps one for each of a
session's latest finished main turns, as for a fork), the histories kept for the turns
after it are forgotten (their part of the conversation is gone: a rewind or a fork to one
of them would mix two pasts), its task list and open plan are cleared, and, when asked,
the files the later turns changed are put back as they were at that turn
(`checkpoints.py`). The event log keeps everything: a `rewound` event of no turn marks the
place, after a notice for whatever could not be done.

The session's change and its history are one step of the store, which also decides the
race with a turn starting (the session must still have no turn); the files come after,
under the session's lock, so no turn of this process starts before they are back.
"""

from __future__ import annotations

import time

from blitz.config.agents import acp_agent_of
from blitz.core.api import validation as check
from blitz.core.driver.endings import FORKABLE_TURNS
from blitz.core.events.event_log import EventLog
from blitz.core.files.checkpoints import Checkpoints, Restored
from blitz.core.locks import SessionLocks
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.ports import CallContext
from blitz.repos import Repositories
from blitz.store import SessionChange, SessionRecord, Store, TurnRecord, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["RewindCalls", "forkable_turn", "refuse_acp", "unrestored_notice"]

# A notice names at most this many paths.
_NAMED = 20


class RewindCalls:
    """RewindSession; `SessionCore` holds what it uses."""

    _store: Store
    _log: EventLog
    _locks: SessionLocks
    _checkpoints: Checkpoints
    _repos: Repositories | None

    async def session_record(self, session_id: str, ctx: CallContext) -> SessionRecord:
        raise NotImplementedError  # pragma: no cover - sessions.SessionCalls'

    async def _view(self, rec: SessionRecord) -> s.Session:
        raise NotImplementedError  # pragma: no cover - sessions.SessionCalls'

    async def rewind_session(
        self, req: s.RewindSessionRequest, ctx: CallContext
    ) -> s.RewindSessionResponse:
        check.require(req.session_id, "session_id")
        check.require(req.to_turn_id, "to_turn_id")
        async with self._locks(req.session_id):
            session = await self.session_record(req.session_id, ctx)
            refuse_acp(session, "rewound")
            await self._refuse_busy(session)
            turn, history = await forkable_turn(
                self._store, session.id, req.to_turn_id, field="to_turn_id", verb="rewound to"
            )
            since = await self._checkpoints.since(session, turn)
            change = SessionChange(update_time=time.time(), tasks=b"", plan=b"", expect_turn_id="")
            rewound = await self._store.rewind(
                session.id, history=history, dropped=since.dropped, change=change
            )
            if not rewound:
                await self._refuse_busy(await self.session_record(session.id, ctx))
                raise _busy("?")  # pragma: no cover - a turn took the session, then ended
            event = t.Rewound(to_turn_id=turn.turn_id, dropped_turn_ids=since.dropped)
            notices: list[str] = []
            if req.files and since.unknown:
                notices.append(
                    "The files were not rewound: the changes of "
                    + _named(since.unknown, "turn")
                    + " are not known (no checkpoint of the workspace was kept for them)."
                )
            elif req.files:
                event.files = True
                restored = await self._checkpoints.put_back(
                    workspace=session.workspace, blobs_of=session.id, plan=since.plan
                )
                event.restored_paths.extend(_shown(p) for p in restored.restored)
                event.unrestored_paths.extend(_shown(p) for p in restored.unrestored)
                if restored.unrestored:
                    notices.append(unrestored_notice(restored))
                if since.partial:
                    notices.append(_PARTIAL)
                if session.repository and self._repos is not None:
                    # Its commits go back to the turn's too: an export or a push after
                    # this holds no dropped turn's commit.
                    await self._repos.rewind(session.id, to_turn=turn.turn_id)
            for text in notices:
                notice = t.TurnEvent(notice=t.Notice(text=text))
                await self._log.commit(session.id, "", notice)
            stored = await self._log.commit(session.id, "", t.TurnEvent(rewound=event))
            view = await self._view(await self.session_record(session.id, ctx))
        return s.RewindSessionResponse(rewound=stored.rewound, session=view)

    async def _refuse_busy(self, session: SessionRecord) -> None:
        """SESSION_BUSY, naming the turn, unless no turn is running, parked or queued in
        the session (its main turn, an aside, its queue)."""
        if session.turn_id:
            raise _busy(session.turn_id)
        running = await self._store.turns_in_state(TurnState.RUNNING, session_id=session.id)
        queued = await self._store.queued_turns(session.id)
        if running or queued:
            raise _busy((running or queued)[0].turn_id)


async def forkable_turn(
    store: Store, session_id: str, turn_id: str, *, field: str, verb: str
) -> tuple[TurnRecord, bytes]:
    """The finished main turn a fork or a rewind goes back to, and the history kept for
    it: TURN_NOT_FOUND, or INVALID_ARGUMENT on `field`, when it cannot be."""
    turn = await store.get_turn(session_id, turn_id)
    if turn is None:
        raise BlitzError(
            Reason.TURN_NOT_FOUND, f"no turn {turn_id!r} in this session", {"turn_id": turn_id}
        )
    if t.Turn.FromString(turn.turn).aside:
        raise invalid_argument(
            field, f"an aside is not recorded into the history: a session cannot be {verb} it"
        )
    if turn.state != TurnState.FINISHED:
        raise invalid_argument(
            field, f"the turn has not finished: a session cannot be {verb} it yet"
        )
    history = await store.get_turn_history(session_id, turn.turn_id)
    if history is None:
        raise invalid_argument(
            field,
            f"no history is kept for this turn: a session can be {verb} its last "
            f"{FORKABLE_TURNS} finished turns, except those a rewind dropped",
            limit=str(FORKABLE_TURNS),
        )
    return turn, history


def unrestored_notice(restored: Restored) -> str:
    """The notice that says which paths were not put back, and why."""
    items = list(restored.unrestored.items())
    said = "; ".join(f"{_shown(path)}: {why}" for path, why in items[:_NAMED])
    more = f"; and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
    return f"Not put back ({len(items)}): {said}{more}."


# Said when a checkpoint involved stopped at one of its bounds.
_PARTIAL = (
    "Some checkpoints of these turns were partial (a workspace past their bounds): changes"
    " to what they left out were not put back."
)


def _busy(turn_id: str) -> BlitzError:
    return BlitzError(
        Reason.SESSION_BUSY,
        "a turn is running, parked or queued in this session: a rewind needs an idle"
        " session (cancel it, or wait for its end)",
        {"turn_id": turn_id},
    )


def _named(ids: list[str], what: str) -> str:
    shown = ", ".join(ids[:_NAMED]) + (" …" if len(ids) > _NAMED else "")
    return f"{what}{'s' if len(ids) > 1 else ''} {shown}"


def _shown(path: str) -> str:
    """A path as text a message may carry: a name that is not UTF-8 shows its bytes as
    replacement characters."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def refuse_acp(session: SessionRecord, done: str) -> None:
    """An ACP agent's memory is its own: a session it serves is not forked or rewound."""
    agent = acp_agent_of(session.model)
    if agent:
        raise invalid_argument(
            "session_id",
            f"a session served by the agent {agent!r} cannot be {done}: the agent's memory"
            " can be neither copied nor taken back",
            agent=agent,
        )
