"""What clients see of stored records: the protobuf views of sessions, rules and the ledger.

Pure functions from records to messages; nothing here reads the store or decides
anything. A session's summed usage is `blitz.core.usage`.

A session's view embeds its open requests, and ListSessions embeds a page of views, so a
view is bounded (`pending_view`): at most `PENDING_LISTED_MAX` requests, within
`PENDING_BUDGET` bytes together, each past its share cut with a note (Watch streams each
one whole, up to the 1 MiB every event is held to).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from itertools import islice

from google.protobuf.timestamp_pb2 import Timestamp

from blitz.config.agents import BUILTIN_AGENT, acp_agent_of
from blitz.core.requests.plans import read_plan
from blitz.size_limits import fit
from blitz.store import (
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionRecord,
    TurnRecord,
    TurnState,
)
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = [
    "PENDING_BUDGET",
    "PENDING_LISTED_MAX",
    "ledger_entry",
    "pending_view",
    "rule_view",
    "session_view",
    "timestamp",
    "turn_summary",
]


# The open requests a session's view lists, and the bytes they may fill together.
PENDING_LISTED_MAX = 1000
PENDING_BUDGET = 2 * 1024 * 1024
# The least share of the budget each listed request keeps.
_PENDING_SHARE_MIN = 2048
_PENDING_CUT_WHY = "a session's view shows each open request cut; Watch shows it whole"


def timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def session_view(
    rec: SessionRecord,
    *,
    usage: t.Usage,
    pending: Iterable[PendingRecord],
    queued: Iterable[str] = (),
) -> s.Session:
    """The session as GetSession, ListSessions and CloseSession return it."""
    session = s.Session(
        id=rec.id,
        title=rec.title,
        workspace=rec.workspace,
        model=rec.model,
        labels=rec.labels,
        state=rec.state,  # type: ignore[arg-type]
        create_time=timestamp(rec.create_time),
        update_time=timestamp(rec.update_time),
        turn_id=rec.turn_id,
        last_seq=rec.last_seq,
        usage=usage,
        pending=pending_view(p.event for p in pending if p.event),
        mode=rec.mode,  # type: ignore[arg-type]
        queued_turn_ids=queued,
        owner=rec.owner,
        agent=acp_agent_of(rec.model) or BUILTIN_AGENT,
    )
    if rec.repository:
        session.repository.ParseFromString(rec.repository)
    if rec.approval_timeout is not None:
        session.approval_timeout.FromTimedelta(timedelta(seconds=rec.approval_timeout))
    plan = read_plan(rec.plan)
    if plan is not None and plan.open:
        session.plan_id = plan.plan_id
    return session


def pending_view(events: Iterable[bytes]) -> list[t.TurnEvent]:
    """Stored open requests as a view lists them: the first PENDING_LISTED_MAX, each cut
    to its share of PENDING_BUDGET."""
    listed = [t.TurnEvent.FromString(data) for data in islice(events, PENDING_LISTED_MAX)]
    share = max(_PENDING_SHARE_MIN, PENDING_BUDGET // max(1, len(listed)))
    for event in listed:
        fit(event, share, why=_PENDING_CUT_WHY)
    return listed


def rule_view(rule: RuleRecord) -> s.Rule:
    return s.Rule(
        id=rule.id,
        scope=rule.scope,  # type: ignore[arg-type]
        kind=rule.kind,  # type: ignore[arg-type]
        scope_label=rule.scope_label,
        session_id=rule.session_id if rule.scope == s.RULE_SCOPE_SESSION else "",
        workspace=rule.workspace,
        caller=rule.caller,
        create_time=timestamp(rule.create_time),
        request_id=rule.request_id,
        match=rule.match_kind,  # type: ignore[arg-type]
        pattern=rule.pattern,
        effect=rule.effect,  # type: ignore[arg-type]
        expire_time=timestamp(rule.expire_time) if rule.expire_time is not None else None,
    )


def ledger_entry(row: LedgerRow) -> s.LedgerEntry:
    return s.LedgerEntry(
        turn_id=row.turn_id,
        model=row.model,
        input=row.input,
        cached=row.cached,
        cache_write=row.cache_write,
        output=row.output,
        cost_usd=row.cost_usd,
        priced=row.priced,
        search_queries=row.search_queries,
        search_cost_usd=row.search_cost_usd,
        time=timestamp(row.time),
        tokens_unknown=row.tokens_unknown,
    )


_TURN_STATES = {
    TurnState.RUNNING: s.TURN_STATE_RUNNING,
    TurnState.PARKED: s.TURN_STATE_PARKED,
    TurnState.QUEUED: s.TURN_STATE_QUEUED,
    TurnState.FINISHED: s.TURN_STATE_FINISHED,
}


def turn_summary(
    rec: TurnRecord,
    *,
    accepted: t.TurnEvent | None,
    finished: t.TurnEvent | None,
    usage: t.Usage | None,
) -> s.TurnSummary:
    """A turn as ListTurns returns it: its request as `accepted` recorded it, and its end
    as `finished` did (each as stored, so masked and within the event limit)."""
    view = s.TurnSummary(
        turn_id=rec.turn_id,
        state=_TURN_STATES[rec.state],
        create_time=timestamp(rec.create_time),
        first_seq=rec.first_seq,
    )
    if accepted is not None and accepted.HasField("accepted"):
        view.turn.CopyFrom(accepted.accepted.turn)
    if usage is not None:
        view.usage.CopyFrom(usage)
    if finished is not None and finished.HasField("finished"):
        view.finish_time.CopyFrom(finished.time)
        view.output = finished.finished.output
        if finished.finished.HasField("error"):
            view.error.CopyFrom(finished.finished.error)
    return view
