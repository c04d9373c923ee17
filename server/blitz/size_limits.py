"""Size limits: the most that anything Blitz stores or answers may hold, and how it is cut.

A stock gRPC client refuses a message over 4 MiB, and one oversized message shared by many
calls (a pending request, which every ListSessions embeds) would break them all. So what is
built from content a model or a client chose (an approval's diff and detail, an event, a
page of sessions) is bounded here, and cut with a note saying what was left out rather
than refused: the content itself stays where it was (the workspace, the model's history).
docs/security.md ("Size limits") lists every limit and why.

Pure functions of text and messages; nothing here reads or stores anything.
"""

from __future__ import annotations

import hashlib

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from blitz.redact import MASK, redact_text

__all__ = [
    "ANSWER_BUDGET",
    "DETAIL_MAX",
    "DIFF_MAX",
    "EVENT_MAX",
    "GRPC_CLIENT_MAX",
    "SCOPE_LABEL_MAX",
    "clip",
    "clip_label",
    "fit",
]

# The largest message a stock gRPC client accepts (grpc.max_receive_message_length).
GRPC_CLIENT_MAX = 4 * 1024 * 1024
# What one unary answer may fill: room under GRPC_CLIENT_MAX for its envelope.
ANSWER_BUDGET = 3 * 1024 * 1024
# One stored event, serialized: whatever its kind, it streams to any client.
EVENT_MAX = 1024 * 1024
# An approval request's one-line detail, and its diff, in characters.
DETAIL_MAX = 4096
DIFF_MAX = 256 * 1024
# A scope label (what a rule made from the request covers), in characters.
SCOPE_LABEL_MAX = 1024

_STRING = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)
# Room kept for the note that says what was cut.
_NOTE_ROOM = 96
# Rounds of cutting before `fit` gives up (each at least halves what is over).
_ROUNDS = 16
# Lists longer than this are halved before any of their items is looked at.
_LONG_LIST = 4096


def clip(text: str, limit: int, *, what: str = "text") -> str:
    """`text`, or its first part and a note of how much of `what` was left out."""
    if len(text) <= limit:
        return text
    note = f"\n… [{what} cut: {len(text) - limit:,} more characters not shown]"
    return text[: max(0, limit - len(note))] + note


def clip_label(label: str) -> str:
    """A scope label of at most SCOPE_LABEL_MAX characters that still names one action.

    A longer label keeps its start and gains the SHA-256 of the whole (masked) label, so a
    rule made from it covers exactly that action and no other with the same start. A label
    whose cut part held a masked secret keeps the mask, so no rule is made from it.
    """
    if len(label) <= SCOPE_LABEL_MAX:
        return label
    masked = redact_text(label)
    digest = hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()
    secret = f", with {MASK}" if MASK in masked else ""
    note = f"… [{len(masked):,} characters{secret}; sha256 {digest}]"
    return redact_text(masked[: SCOPE_LABEL_MAX - len(note)] + note)


def fit(message: Message, max_bytes: int, *, why: str) -> int:
    """Cut `message` in place until it serializes to at most `max_bytes`; bytes it had over.

    The longest strings are cut first (each keeps its start and a note naming `why`), then,
    if that is not enough, the longest lists lose their tail. Returns 0 when it fitted
    already; the caller checks `ByteSize()` for the pathological rest (a message of
    nothing but map keys, say).
    """
    size = message.ByteSize()
    over = size - max_bytes
    if over <= 0:
        return 0
    for _ in range(_ROUNDS):
        excess = message.ByteSize() - max_bytes
        if excess <= 0:
            break
        if _cut_lists(message, why, longer_than=_LONG_LIST):
            continue  # a list that long is cut first: walking its items costs the most
        slots = [s for s in _slots(message) if s.size > 2 * _NOTE_ROOM]
        if sum(s.size - 2 * _NOTE_ROOM for s in slots) >= excess:
            _cut_strings(slots, excess, why)  # the strings alone can give enough
        elif not _cut_lists(message, why) and not _cut_strings(slots, excess, why):
            break
    return over


class _Slot:
    """One string (or bytes) value inside a message, and how to replace it."""

    __slots__ = ("container", "key", "size", "value")

    def __init__(self, container: object, key: object, value: str | bytes) -> None:
        self.container = container
        self.key = key
        self.value = value
        self.size = len(value.encode()) if isinstance(value, str) else len(value)

    def cut(self, keep: int, why: str) -> None:
        value = self.value
        if isinstance(value, bytes):
            new: str | bytes = value[:keep]
        else:
            note = f" … [{self.size - keep:,} bytes cut: {why}]"
            start = value.encode()[: max(0, keep - len(note))].decode("utf-8", "ignore")
            new = start + note
        if isinstance(self.key, str) and isinstance(self.container, Message):
            setattr(self.container, self.key, new)
        else:
            self.container[self.key] = new  # type: ignore[index]


def _slots(message: Message) -> list[_Slot]:
    """The strings of `message` long enough to be worth cutting (a note's room and more)."""
    least = 2 * _NOTE_ROOM
    found: list[_Slot] = []
    stack = [message]
    while stack:
        msg = stack.pop()
        for field, value in msg.ListFields():
            if field.type in _STRING:
                if field.is_repeated:
                    found.extend(_Slot(value, i, v) for i, v in enumerate(value) if len(v) > least)
                elif len(value) > least:
                    found.append(_Slot(msg, field.name, value))
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                if field.message_type.GetOptions().map_entry:
                    inner = field.message_type.fields_by_name["value"]
                    if inner.type == FieldDescriptor.TYPE_MESSAGE:
                        stack.extend(value[k] for k in value)
                    elif inner.type in _STRING:
                        found.extend(
                            _Slot(value, k, value[k]) for k in value if len(value[k]) > least
                        )
                elif field.is_repeated:
                    stack.extend(value)
                else:
                    stack.append(value)
    return found


def _cut_strings(slots: list[_Slot], excess: int, why: str) -> bool:
    """Cut the longest strings to one length, enough to lose `excess` bytes; whether any was."""
    slots = sorted(slots, key=lambda s: s.size, reverse=True)
    if not slots:
        return False
    # The cut length: the longest `keep` such that cutting every longer string to it
    # frees `excess` bytes and room for their notes (water-filling over the sorted sizes).
    freed = 0
    keep = 0
    for i, slot in enumerate(slots):
        need = excess + _NOTE_ROOM * (i + 1)
        following = slots[i + 1].size if i + 1 < len(slots) else 0
        step = (slot.size - following) * (i + 1)
        if freed + step >= need:
            keep = slot.size - (need - freed + i) // (i + 1)
            break
        freed += step
    keep = max(keep, _NOTE_ROOM)
    cut = [s for s in slots if s.size > keep]
    for slot in cut:
        slot.cut(keep, why)
    return bool(cut)


def _cut_lists(message: Message, why: str, *, longer_than: int = 1) -> bool:
    """Halve the longest list (a repeated field or a map) in `message` if it has more than
    `longer_than` items; whether one was."""
    longest: tuple[int, Message, FieldDescriptor] | None = None
    stack = [message]
    while stack:
        msg = stack.pop()
        for field, value in msg.ListFields():
            if field.is_repeated and len(value) > longer_than:
                if longest is None or len(value) > longest[0]:
                    longest = (len(value), msg, field)
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                continue
            if field.message_type.GetOptions().map_entry:
                inner = field.message_type.fields_by_name["value"]
                if inner.type == FieldDescriptor.TYPE_MESSAGE:
                    stack.extend(value[k] for k in value)
            elif field.is_repeated:
                stack.extend(value)
            else:
                stack.append(value)
    if longest is None:
        return False
    count, msg, field = longest
    keep = count // 2
    value = getattr(msg, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        for key in list(value)[keep:]:
            del value[key]
        return True
    del value[keep:]
    note = f"… [{count - keep:,} more items cut: {why}]"
    if field.type == FieldDescriptor.TYPE_STRING:
        value.append(note)
    elif field.message_type is not None and field.message_type.full_name == "google.protobuf.Value":
        value.add().string_value = note
    return True
