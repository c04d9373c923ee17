"""The views of stored records: a session's open requests are listed within a budget."""

from __future__ import annotations

from blitz.core.api.views import PENDING_BUDGET, PENDING_LISTED_MAX, pending_view
from blitz.v1 import turn_pb2 as t


def request(i: int, diff_size: int) -> bytes:
    approval = t.ApprovalRequest(
        request_id=f"call_{i}", kind=t.ACTION_KIND_WRITE, detail=f"f{i}.txt", diff="+" * diff_size
    )
    return t.TurnEvent(seq=i + 1, approval_request=approval).SerializeToString()


def test_one_open_request_is_listed_whole() -> None:
    [listed] = pending_view([request(0, 256 * 1024)])
    assert len(listed.approval_request.diff) == 256 * 1024


def test_many_large_open_requests_share_the_budget_and_say_what_was_cut() -> None:
    listed = pending_view(request(i, 256 * 1024) for i in range(300))
    assert len(listed) == 300
    assert sum(e.ByteSize() for e in listed) <= PENDING_BUDGET
    first = listed[0].approval_request
    assert (first.request_id, first.detail) == ("call_0", "f0.txt"), "small fields stay whole"
    assert first.diff.startswith("+++") and "bytes cut: a session's view shows" in first.diff


def test_a_view_lists_at_most_so_many_open_requests() -> None:
    listed = pending_view(request(i, 10) for i in range(PENDING_LISTED_MAX + 5))
    assert len(listed) == PENDING_LISTED_MAX
    assert listed[-1].seq == PENDING_LISTED_MAX
