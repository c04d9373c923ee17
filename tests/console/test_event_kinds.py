"""The console shows every kind of TurnEvent, or says why it does not.

The kinds are read from the protobuf descriptor (turn.proto's `kind` oneof); the console's
side from its source, console/src/log.ts, which folds events into the log: each kind has
a `case "…"` in its `apply` (the compiler checks that `apply` names every kind of the
TypeScript stubs, with `satisfies never`), and the kinds it shows nothing of on purpose
are the keys of `IGNORED_KINDS`, each with its reason. A kind added to the proto fails
here until the console handles it. Needs no Node. tests/clients/test_event_kinds.py holds
the terminal renderer to the same.
"""

from __future__ import annotations

import re
from pathlib import Path

from blitz.v1 import turn_pb2

LOG_TS = Path(__file__).resolve().parents[2] / "console" / "src" / "log.ts"


def _local_name(field: str) -> str:
    """protoc-gen-es's name of a oneof field: `flow_step` is `flowStep`."""
    head, *rest = field.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


KINDS = {
    _local_name(field.name) for field in turn_pb2.TurnEvent.DESCRIPTOR.oneofs_by_name["kind"].fields
}


def _source() -> str:
    return LOG_TS.read_text(encoding="utf-8")


def _folded() -> set[str]:
    """The `case "…"` labels of `apply`, the function that folds one event."""
    found = re.search(r"\nfunction apply\(.*?\n}\n", _source(), re.DOTALL)
    assert found, "console/src/log.ts has no `function apply(`"
    return set(re.findall(r'^\s*case "(\w+)":', found.group(0), re.MULTILINE))


def _ignored() -> dict[str, str]:
    """`IGNORED_KINDS`: kind → reason."""
    found = re.search(
        r"^export const IGNORED_KINDS\b[^=]*=\s*\{(.*?)\};", _source(), re.DOTALL | re.MULTILINE
    )
    assert found, "console/src/log.ts has no `export const IGNORED_KINDS = {…};`"
    body = re.sub(r"//[^\n]*", "", found.group(1))
    entries = re.findall(r'(\w+):\s*"((?:[^"\\]|\\.)*)"', body)
    leftover = re.sub(r'(\w+):\s*"((?:[^"\\]|\\.)*)"', "", body).replace(",", "").strip()
    assert leftover == "", f'IGNORED_KINDS holds more than `kind: "reason"` entries: {leftover}'
    return dict(entries)


def test_every_kind_of_turn_event_is_shown_or_ignored_on_purpose() -> None:
    ignored = _ignored()
    shown = _folded() - ignored.keys()
    missing = KINDS - shown - ignored.keys()
    assert missing == set(), (
        f"the console neither shows nor ignores {sorted(missing)}: fold them in log.ts's"
        " `apply` or list them in IGNORED_KINDS with a reason"
    )


def test_the_ignored_kinds_are_kinds_of_the_proto_with_a_reason() -> None:
    ignored = _ignored()
    assert ignored.keys() <= KINDS, "a kind ignored that turn.proto does not have"
    assert all(reason.strip() for reason in ignored.values())


def test_apply_names_no_kind_the_proto_lacks() -> None:
    assert _folded() - KINDS == set()
