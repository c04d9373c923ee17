"""Templates of workflow files: `${{ params.X }}`, `${{ steps.ID.output }}`, `.status`.

Rendered by Jinja2's `SandboxedEnvironment`, never by hand: a template cannot reach a
Python object's insides (`''.__class__`), a global (`lipsum.__globals__`: this environment
has none), a file (no loader, and `include`/`import`/`extends` are refused when the file is
loaded) or the environment. What a template may name is checked once, when the file is
loaded (`references`): `params.NAME` of a declared parameter and `steps.ID` of an earlier
step, nothing else; loops nested over values known then (`'x' * 9999`) that would run past
the step budget are refused then too.

Every rendering runs under a `TemplateBudget` (steps, output, value size, seconds; see
`budget.py`), counted by the sandbox itself (`_sandbox.py`), so a runaway template stops
on its own, wherever it runs. The server renders off the event loop (`render_off_loop`,
`condition_off_loop`), on a small pool of its own threads: a rendering that is stopped
after its seconds frees its thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jinja2 import TemplateError, nodes
from jinja2.sandbox import SecurityError

from blitz.offload import CallTimedOut, Offload
from blitz.workflows._sandbox import ENV, metered
from blitz.workflows.budget import DEFAULT_BUDGET, BudgetExceeded, TemplateBudget, TemplateRefused

__all__ = [
    "BudgetExceeded",
    "References",
    "TemplateBudget",
    "TemplateRefused",
    "condition",
    "condition_off_loop",
    "references",
    "render",
    "render_off_loop",
]

_NAMES = ("params", "steps")
_STEP_FIELDS = ("output", "status")
_T = TypeVar("_T")
# Renderings at once: each is CPU work under the GIL, so more would only take turns. A
# call waits for a thread at most this long, beyond the rendering's own seconds.
_THREADS = 2
_WAIT_S = 30.0
_RENDERS = Offload(threads=_THREADS, timeout=_WAIT_S, name="blitz-templates")
# What a failed rendering may raise: the sandbox's refusals and Python's own errors on
# values (`1 / 0`, `'a' - 1`, an int of 5000 digits, a macro that calls itself).
_FAILURES = (TemplateError, SecurityError, TypeError, ValueError, ArithmeticError, RecursionError)


@dataclass
class References:
    """What a template names: parameters, and steps with the field read of each."""

    params: set[str] = field(default_factory=set)
    steps: set[str] = field(default_factory=set)


def _parse(source: str) -> nodes.Template:
    try:
        return ENV.parse(source)
    except (TemplateError, ValueError, RecursionError) as exc:
        raise TemplateRefused(f"template syntax: {exc}") from None


def _expression_source(expression: str) -> str:
    return "${{ " + expression + " }}"


def references(
    source: str, *, expression: bool = False, budget: TemplateBudget = DEFAULT_BUDGET
) -> References:
    """What the template (or, with `expression`, the bare expression of an `if`) names;
    TemplateRefused for bad syntax, an unknown name, a private attribute or a tag that
    would read a file; BudgetExceeded for loops that would run past `budget.steps`."""
    tree = _parse(_expression_source(source) if expression else source)
    _check_loops(tree, budget)
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


def _known_length(node: nodes.Node) -> int | None:
    """How many items `node` has, when the file says so (`'x' * 9999`, `[1, 2]`)."""
    if isinstance(node, nodes.Const) and isinstance(node.value, (str, list, tuple, dict)):
        return len(node.value)
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return len(node.items)
    if isinstance(node, nodes.Dict):
        return len(node.items)
    if isinstance(node, nodes.Mul):
        for seq, times in ((node.left, node.right), (node.right, node.left)):
            length = _known_length(seq)
            if (
                length is not None
                and isinstance(times, nodes.Const)
                and isinstance(times.value, int)
            ):
                return length * max(times.value, 0)
    if isinstance(node, nodes.Add):
        left, right = _known_length(node.left), _known_length(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def _check_loops(node: nodes.Node, budget: TemplateBudget, runs: int = 1) -> None:
    """Refuses loops that would run past the step budget whatever the params and the steps'
    outputs: each loop over a known number of items, times the loops around it."""
    for child in node.iter_child_nodes():
        inner = runs
        if isinstance(child, nodes.For):
            length = _known_length(child.iter)
            if length is not None:
                inner = runs * max(length, 1)
                if inner > budget.steps:
                    raise BudgetExceeded(
                        "steps",
                        budget,
                        f"the loops at line {child.lineno} run {_about(inner)} times or more",
                    )
        elif isinstance(child, nodes.Macro | nodes.CallBlock):
            inner = 1  # run as often as called, which the call's loops count
        _check_loops(child, budget, inner)


def _about(count: int) -> str:
    return f"{count}" if count < 10**6 else f"10^{int(math.log10(count))}"


def _context(params: Mapping[str, Any], steps: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {
        "params": dict(params),
        "steps": {sid: {f: got.get(f, "") for f in _STEP_FIELDS} for sid, got in steps.items()},
    }


def render(
    source: str,
    params: Mapping[str, Any],
    steps: Mapping[str, Mapping[str, str]],
    *,
    budget: TemplateBudget = DEFAULT_BUDGET,
) -> str:
    """The template with `params` and the finished `steps` (id → output, status) filled in;
    TemplateRefused when it fails (a refused operation, an undefined value), BudgetExceeded
    when it goes past `budget`. Blocks for up to `budget.seconds`: see `render_off_loop`."""
    try:
        with metered(budget):
            return ENV.from_string(source).render(_context(params, steps))
    except BudgetExceeded:
        raise
    except RecursionError:
        raise TemplateRefused("template failed: it calls itself too deeply") from None
    except _FAILURES as exc:
        raise TemplateRefused(f"template failed: {exc}") from None


def condition(
    expression: str,
    params: Mapping[str, Any],
    steps: Mapping[str, Mapping[str, str]],
    *,
    budget: TemplateBudget = DEFAULT_BUDGET,
) -> bool:
    """Whether an `if` expression holds; refused as `render` refuses."""
    try:
        with metered(budget):
            compiled = ENV.compile_expression(expression, undefined_to_none=False)
            return bool(compiled(**_context(params, steps)))
    except BudgetExceeded:
        raise
    except RecursionError:
        raise TemplateRefused("condition failed: it nests too deeply") from None
    except _FAILURES as exc:
        raise TemplateRefused(f"condition failed: {exc}") from None


async def render_off_loop(
    source: str,
    params: Mapping[str, Any],
    steps: Mapping[str, Mapping[str, str]],
    *,
    budget: TemplateBudget = DEFAULT_BUDGET,
) -> str:
    """`render` on a template thread, so that the event loop never waits on it."""
    return await _off_loop(render, source, params, steps, budget)


async def condition_off_loop(
    expression: str,
    params: Mapping[str, Any],
    steps: Mapping[str, Mapping[str, str]],
    *,
    budget: TemplateBudget = DEFAULT_BUDGET,
) -> bool:
    """`condition` on a template thread."""
    return await _off_loop(condition, expression, params, steps, budget)


async def _off_loop(
    call: Callable[..., _T],
    text: str,
    params: Mapping[str, Any],
    steps: Mapping[str, Mapping[str, str]],
    budget: TemplateBudget,
) -> _T:
    try:
        return await _RENDERS.run(call, text, params, steps, budget=budget)
    except CallTimedOut:
        raise _busy(budget) from None


def _busy(budget: TemplateBudget) -> BudgetExceeded:
    """Never a rendering's own overrun (it stops itself at its seconds): the threads stayed
    busy with others'."""
    return BudgetExceeded("seconds", budget, f"no template thread was free for {_WAIT_S:g} s")
