"""Reading a list of TurnEvents the way tests compare them: by kind, and by what a reader sees."""

from __future__ import annotations

from blitz.v1 import turn_pb2 as t

__all__ = ["kinds", "shape"]


def kinds(events: list[t.TurnEvent]) -> list[str]:
    """Each event's kind ("accepted", "text", ... "finished"), in order."""
    return [e.WhichOneof("kind") or "" for e in events]


def shape(events: list[t.TurnEvent]) -> tuple[str, str, list[t.TurnEvent]]:
    """What a reader must get whatever the coalescing: all streamed text, every other event.

    Partial chunks may arrive merged (a merged event carries its last chunk's seq), so two
    deliveries of the same log compare equal by this, not event by event.
    """

    def streamed(thought: bool) -> str:
        return "".join(
            e.text.text
            for e in events
            if e.HasField("text") and e.text.partial and e.text.thought == thought
        )

    # Compared as messages: serialized Structs (maps) have no fixed byte order.
    others = [e for e in events if not (e.HasField("text") and e.text.partial)]
    return streamed(False), streamed(True), others
