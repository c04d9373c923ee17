"""A page of a listing, filled while it fits one answer.

No answer may outgrow a stock gRPC client (4 MiB): a page of ListSessions or ListTurns
ends early once its views fill `ANSWER_BUDGET`, and its token then leads on from there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableSequence, Sequence
from typing import TypeVar

from blitz.core.api.validation import page_token
from blitz.size_limits import ANSWER_BUDGET
from blitz.store import SessionRecord, TurnRecord
from blitz.v1 import session_pb2 as s

__all__ = ["fill_page"]

# A stored record and the message that shows it, for a page of either (fill_page).
_Rec = TypeVar("_Rec", SessionRecord, TurnRecord)
_View = TypeVar("_View", s.Session, s.TurnSummary)


async def fill_page(
    recs: Sequence[_Rec],
    size: int,
    view: Callable[[_Rec], Awaitable[_View]],
    page: MutableSequence[_View],
) -> str:
    """Add the views of the first `size` records to `page` while they fit one answer
    (ANSWER_BUDGET; always at least one); the next page's token, "" when none is left."""
    used = 0
    for rec in recs[:size]:
        shown = await view(rec)
        used += shown.ByteSize() + 8  # the field's tag and length
        if page and used > ANSWER_BUDGET:
            break  # the page is full: the next one starts at this record
        page.append(shown)
    return page_token(recs[len(page) - 1]) if len(recs) > len(page) else ""
