"""Templates of workflow files: `${{ params.X }}`, `${{ steps.ID.output }}`, `.status`.

Rendered by Jinja2's `SandboxedEnvironment`, never by hand: a template cannot reach a
Python object's insides (`''.__class__`), a global (`lipsum.__globals__`: this environment
has none), a file (no loader, and `include`/`import`/`extends` are refused when the file is
loaded) or the environment. What a template may name is checked once, when the file is
loaded (`references`): `params.NAME` of a declared parameter and `steps.ID` of an earlier
step, nothing else. Repetition (`'x' * 10**9`) is bounded so a template cannot exhaust
memory.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jinja2 import StrictUndefined, TemplateError, nodes
from jinja2.sandbox import SandboxedEnvironment, SecurityError

__all__ = ["References", "TemplateRefused", "condition", "references", "render"]

# The largest string or list a template may build by repetition, and the largest exponent.
_MAX_REPEAT = 1 << 20
_MAX_EXPONENT = 64
_NAMES = ("params", "steps")
_STEP_FIELDS = ("output", "status")


class TemplateRefused(ValueError):
    """A template that cannot be loaded or rendered: why, in words for the user."""


class _Sandbox(SandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "**":
            if isinstance(right, (int, float)) and abs(right) > _MAX_EXPONENT:
                raise SecurityError("the exponent is too large")
            return operator.pow(left, right)
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                if len(seq) * times > _MAX_REPEAT:
                    raise SecurityError("the repetition is too large")
        return operator.mul(left, right)


_ENV = _Sandbox(
    variable_start_string="${{",
    variable_end_string="}}",
    block_start_string="${%",
    block_end_string="%}",
    comment_start_string="${#",
    comment_end_string="#}",
    undefined=StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
)
# No `range`, `lipsum`, `dict`, `cycler`, `joiner` or `namespace`: a template sees only
# what `render` hands it.
_ENV.globals.clear()


@dataclass
class References:
    """What a template names: parameters, and steps with the field read of each."""

    params: set[str] = field(default_factory=set)
    steps: set[str] = field(default_factory=set)


def _parse(source: str) -> nodes.Template:
    try:
        return _ENV.parse(source)
    except TemplateError as exc:
        raise TemplateRefused(f"template syntax: {exc}") from None


def _expression_source(expression: str) -> str:
    return "${{ " + expression + " }}"


def references(source: str, *, expression: bool = False) -> References:
    """What the template (or, with `expression`, the bare expression of an `if`) names;
    TemplateRefused for bad syntax, an unknown name, a private attribute or a tag that
    would read a file."""
    tree = _parse(_expression_source(source) if expression else source)
    for refused in (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends):
        if tree.find(refused) is not None:
            raise TemplateRefused("templates cannot include, import or extend other files")
    found = References()
    for attr in tree.find_all(nodes.Getattr):
        if attr.attr.startswith("_"):
            raise TemplateRefused(f"templates cannot read the attribute {attr.attr!r}")
    for item in tree.find_all(nodes.Getitem):
        key = item.arg
        if isinstance(key, nodes.Const) and isinstance(key.value, str) and key.value[:1] == "_":
            raise TemplateRefused(f"templates cannot read the item {key.value!r}")
    assigned = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    for name in tree.find_all(nodes.Name):
        if name.ctx == "load" and name.name not in _NAMES and name.name not in assigned:
            raise TemplateRefused(
                f"unknown name {name.name!r}: templates see only `params` and `steps`"
            )
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        assert isinstance(node, (nodes.Getattr, nodes.Getitem))
        base = node.node
        if not isinstance(base, nodes.Name) or base.name not in _NAMES:
            continue
        named = _key(node)
        if named is None:
            raise TemplateRefused(f"`{base.name}` must be read with a fixed name")
        (found.params if base.name == "params" else found.steps).add(named)
    return found


def _key(node: nodes.Getattr | nodes.Getitem) -> str | None:
    if isinstance(node, nodes.Getattr):
        return node.attr
    arg = node.arg
    return arg.value if isinstance(arg, nodes.Const) and isinstance(arg.value, str) else None


def _context(params: Mapping[str, Any], steps: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {
        "params": dict(params),
        "steps": {sid: {f: got.get(f, "") for f in _STEP_FIELDS} for sid, got in steps.items()},
    }


def render(source: str, params: Mapping[str, Any], steps: Mapping[str, Mapping[str, str]]) -> str:
    """The template with `params` and the finished `steps` (id → output, status) filled in;
    TemplateRefused when it fails (a refused operation, an undefined value)."""
    try:
        return _ENV.from_string(source).render(_context(params, steps))
    except (TemplateError, SecurityError, TypeError, ValueError, ArithmeticError) as exc:
        raise TemplateRefused(f"template failed: {exc}") from None


def condition(
    expression: str, params: Mapping[str, Any], steps: Mapping[str, Mapping[str, str]]
) -> bool:
    """Whether an `if` expression holds."""
    try:
        compiled = _ENV.compile_expression(expression, undefined_to_none=False)
        return bool(compiled(**_context(params, steps)))
    except (TemplateError, SecurityError, TypeError, ValueError, ArithmeticError) as exc:
        raise TemplateRefused(f"condition failed: {exc}") from None
