"""The terminal renderer shows every kind of TurnEvent, or says why it does not.

The kinds are read from the protobuf descriptor (turn.proto's `kind` oneof), so a kind
added to the proto fails here until `blitz_cli/render.py` either handles it in
`Renderer.event` (a `kind == "…"` or `kind in (…)` test there) or lists it in
`IGNORED_KINDS` with its reason. tests/console/test_event_kinds.py holds the console to
the same.
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap

from rich.console import Console

from blitz.v1 import turn_pb2
from blitz_cli import render
from blitz_cli.render import IGNORED_KINDS, Renderer

KINDS = {field.name for field in turn_pb2.TurnEvent.DESCRIPTOR.oneofs_by_name["kind"].fields}


def _kinds_handled_by_event() -> set[str]:
    """The kind names `Renderer.event` compares `kind` with."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(render.Renderer.event)))
    named: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)):
            continue
        if node.left.id != "kind":
            continue
        for right in node.comparators:
            for constant in ast.walk(right):
                if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                    named.add(constant.value)
    return named


def test_every_kind_of_turn_event_is_shown_or_ignored_on_purpose() -> None:
    shown = _kinds_handled_by_event()
    missing = KINDS - shown - IGNORED_KINDS.keys()
    assert missing == set(), (
        f"render.py neither shows nor ignores {sorted(missing)}: handle them in"
        " Renderer.event or list them in IGNORED_KINDS with a reason"
    )


def test_the_ignored_kinds_are_kinds_of_the_proto_with_a_reason_and_not_shown() -> None:
    assert IGNORED_KINDS.keys() <= KINDS, "a kind ignored that turn.proto does not have"
    assert all(reason.strip() for reason in IGNORED_KINDS.values())
    assert IGNORED_KINDS.keys() & _kinds_handled_by_event() == set()


def test_an_ignored_kind_prints_nothing() -> None:
    for kind in IGNORED_KINDS:
        out = io.StringIO()
        renderer = Renderer(Console(file=out, width=100, color_system=None))
        event = turn_pb2.TurnEvent(turn_id="t_1")
        getattr(event, kind).SetInParent()
        renderer.event(event, replay=True)
        renderer.settle()
        assert out.getvalue() == "", kind
