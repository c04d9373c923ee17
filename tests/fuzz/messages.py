"""Hypothesis strategies for Blitz's requests, built from the proto descriptors.

`message(descriptor)` draws a message of that type whose every field may be set: strings
from empty to several MiB, integers at their type's extremes, NaN and infinities, enum
values the schema does not know, repeated fields and maps from empty to thousands of
entries, nested messages (Turn, its ContextBlocks, Durations) in turn. `mutated` breaks a
valid encoding: flipped, cut, inserted and repeated bytes, and groups nested past any
decoder's depth.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

__all__ = ["message", "mutated"]

# Long strings are drawn from these sizes: room for every limit a field has, and past it.
_LONG = [257, 513, 1025, 4097, 16_385, 65_537, 262_145, 1_048_577, 3_000_000]
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.sampled_from(["", "s_", "..", "../../etc/passwd", "nan", "-1", "\x00", "💥" * 3]),
        st.builds(lambda n, c: c * n, st.sampled_from(_LONG), st.sampled_from("xé\n💥")),
    )


def _int(field: FieldDescriptor) -> st.SearchStrategy[int]:
    low, high = _INT_RANGES[field.type]
    return st.one_of(
        st.integers(low, high), st.sampled_from([low, high, 0, -1, 1]).filter(lambda v: low <= v)
    )


def _scalar(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _text()
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.one_of(
            st.binary(max_size=64), st.sampled_from(_LONG).map(lambda n: b"\x89PNG" * (n // 4))
        )
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=64 if kind == 1 else 32)
    if kind == FieldDescriptor.TYPE_ENUM:
        return st.integers(-3, 12)  # known values and some the schema does not have
    if kind == FieldDescriptor.TYPE_MESSAGE:
        return message(field.message_type, depth + 1)
    return _int(field)


def _field(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key = _scalar(field.message_type.fields_by_name["key"], depth)
        value = _scalar(field.message_type.fields_by_name["value"], depth)
        return st.one_of(
            st.dictionaries(key, value, max_size=4),
            st.sampled_from([65, 5000]).map(lambda n: {f"k{i}": "v" for i in range(n)}),
        )
    item = _scalar(field, depth)
    if field.is_repeated:
        # Past every count limit, with items small enough that the list stays sendable.
        many = st.sampled_from([17, 33, 65, 3000]).map(lambda n: [_small(field)] * n)
        return st.one_of(st.lists(item, max_size=4), many)
    return item


def _small(field: FieldDescriptor) -> Any:
    if field.type == FieldDescriptor.TYPE_STRING:
        return "x"
    if field.type == FieldDescriptor.TYPE_BYTES:
        return b"x"
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return GetMessageClass(field.message_type)()
    return 1


def message(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """A message of `descriptor`'s type with any of its fields set to anything."""
    cls = GetMessageClass(descriptor)
    if depth > 3:
        return st.just(cls())
    fields = {f.name: _field(f, depth) for f in descriptor.fields}
    return st.fixed_dictionaries({}, optional=fields).map(lambda values: _build(cls, values))


def _build(cls: type[Message], values: dict[str, Any]) -> Message:
    msg = cls()
    for name, value in values.items():
        try:
            if isinstance(value, Message):
                getattr(msg, name).CopyFrom(value)
            elif isinstance(value, dict):
                getattr(msg, name).update(value)
            elif isinstance(value, list):
                getattr(msg, name).extend(value)
            else:
                setattr(msg, name, value)
        except (ValueError, TypeError):
            continue  # a value this field's type cannot hold at all (the wire can, below)
    return msg


def _deep_groups(depth: int) -> bytes:
    """Start-group tags of an unknown field, nested `depth` deep, then their ends."""
    return b"\x7b" * depth + b"\x7c" * depth  # field 15, wire types 3 and 4


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    """A valid encoding broken in one or more places."""
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "cut", "insert", "repeat", "deep", "truncate"]))
        at = draw(st.integers(0, len(data))) if data else 0
        if how == "flip" and data:
            index = min(at, len(data) - 1)
            data[index] ^= draw(st.integers(1, 255))
        elif how == "cut":
            del data[at : at + draw(st.integers(1, 8))]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif how == "repeat":
            data += data[: draw(st.integers(0, 32))]
        elif how == "deep":
            data[at:at] = _deep_groups(draw(st.sampled_from([5, 99, 101, 5000])))
        else:
            del data[at:]
    return bytes(data)
