"""Merging adjacent partial text chunks, so a slow reader or writer catches up.

Two events merge only when both are partial text of the same turn, author and kind
(answer or thought). The merged event keeps all the text and the later event's seq, so a
client that resumes after it misses nothing and sees nothing twice.
"""

from __future__ import annotations

from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["coalesce", "mergeable"]


def mergeable(a: TurnEvent, b: TurnEvent) -> bool:
    """Whether `b` may be appended to `a` without losing meaning."""
    if a.WhichOneof("kind") != "text" or b.WhichOneof("kind") != "text":
        return False
    ta, tb = a.text, b.text
    return (
        ta.partial
        and tb.partial
        and ta.thought == tb.thought
        and a.turn_id == b.turn_id
        and a.author == b.author
    )


def coalesce(events: list[TurnEvent], *, owned: bool = False) -> list[TurnEvent]:
    """Merge runs of mergeable events, keeping order; returns a shorter-or-equal list.

    With `owned`, the first event of a run is extended in place; otherwise it is copied
    first, since the same event object may be on its way to other readers.
    """
    if len(events) < 2:
        return events
    out: list[TurnEvent] = [events[0]]
    fresh = False  # whether out[-1] is a copy made here
    for event in events[1:]:
        last = out[-1]
        if mergeable(last, event):
            if not owned and not fresh:
                last = TurnEvent()
                last.CopyFrom(out[-1])
                out[-1] = last
                fresh = True
            last.text.text += event.text.text
            last.seq = event.seq
            if event.HasField("time"):
                last.time.CopyFrom(event.time)
        else:
            out.append(event)
            fresh = False
    return out
