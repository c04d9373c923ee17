"""The Jinja2 sandbox that renders workflow templates under a `TemplateBudget`.

Jinja2's `SandboxedEnvironment` keeps a template away from Python's insides; it does not
bound work: three nested loops of 10^4 each are 10^12 iterations, all of them "safe". So
every template is compiled by `_MeteredCodeGenerator`, which rewrites the parsed tree
before any code is generated (whatever compiles it: `render`, `compile_expression`):

- each `for` body starts by counting one step, and a loop's `if` filter counts one per item
  tested: nested and recursive loops count every iteration, as they run the same body;
- every `{{ }}` and every piece of text goes through `_emit`, which counts the characters
  written, captured ones (`set` blocks, macro bodies) included;
- list, tuple and dict literals and `~` are checked against the `value` limit *before* they
  are built (a `~` of a thousand megabyte strings is refused, not allocated).

The environment counts the rest: every call (macros, `loop(...)`, methods) is a step, and
strings keep only methods whose result is no larger than the string or a width within the
limit (no `replace`, `join`, `format`, `expandtabs`: their filters are checked instead);
lists and dicts cannot be changed in place (`ImmutableSandboxedEnvironment`); `+`, `*`,
`**` and `%` are checked against `value` before Python runs them; every filter counts
one step and the items it walks (an iterator's items as it pulls them), refuses arguments
that would make it write more than `value`, and has its result measured. Filters that only
make HTML or debug output (`urlize`, `xmlattr`, `pprint`, `striptags`, `random`, …) are
left out.

Together these keep one invariant: no value the template holds is larger than `value`, so
no single operation (a comparison, a `str()`, a sort) costs more than about that much, and
the step counter, which also checks the deadline, runs between them. A runaway rendering
therefore stops itself within `seconds`, on whatever thread it runs.

The budget of the rendering in progress is a context variable: `metered` sets it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.visitor import NodeTransformer

from blitz.workflows.budget import BudgetExceeded, TemplateBudget

__all__ = ["ENV", "metered"]

# The largest exponent, and the largest integer (in bits) arithmetic may build: Python
# converts at most 4300 digits to text anyway.
_MAX_EXPONENT = 64
_MAX_BITS = 1 << 14
# Characters of a string a filter or method handles per counted step (`join` walks a
# string at about this many characters per loop iteration's time).
_CHARS_PER_STEP = 8
# Steps counted between two looks at the clock while a value is measured.
_CLOCK_EVERY = 1024


class Budget:
    """The counters of one rendering against its limits."""

    def __init__(self, limits: TemplateBudget) -> None:
        self.limits = limits
        self.steps = 0
        self.written = 0
        self.deadline = time.monotonic() + limits.seconds
        # Containers already measured, kept alive so that their ids stay theirs.
        self._sizes: dict[int, tuple[Any, int]] = {}

    def charge(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > self.limits.steps:
            raise BudgetExceeded("steps", self.limits, "the template does too much work")
        if time.monotonic() > self.deadline:
            raise BudgetExceeded("seconds", self.limits, "the template takes too long")

    def write(self, text: str) -> str:
        self.written += len(text)
        if self.written > self.limits.output:
            raise BudgetExceeded("output", self.limits, "the template writes too much")
        self.charge()
        return text

    def refuse_value(self, what: str) -> BudgetExceeded:
        return BudgetExceeded("value", self.limits, what)

    def check(self, size: int, what: str) -> None:
        if size > self.limits.value:
            raise self.refuse_value(what)

    def size(self, value: Any) -> int:
        """A value's size: a string's length; a container's items and, inside, their sizes
        (a list held twice counts twice, as `str()` would write it twice). Walks at most
        `value` items, each a step; refuses past the limit."""
        if isinstance(value, (str, bytes)):
            return len(value)
        if not isinstance(value, (list, tuple, dict, set, frozenset)):
            return 1
        known = self._sizes.get(id(value))
        if known is not None:
            return known[1]
        total, walked, pending = 0, 0, [value]
        while pending:
            item = pending.pop()
            if isinstance(item, (str, bytes)):
                total += len(item)
            elif isinstance(item, (list, tuple, dict, set, frozenset)):
                seen = self._sizes.get(id(item))
                if seen is not None:
                    total += seen[1]
                else:
                    total += 1
                    walked += 1
                    if isinstance(item, dict):
                        pending.extend(item.keys())
                        pending.extend(item.values())
                    else:
                        pending.extend(item)
                    if walked % _CLOCK_EVERY == 0:
                        self.charge(_CLOCK_EVERY)
            else:
                total += 1
            if total > self.limits.value:
                raise self.refuse_value("the template builds a value too large")
        self.charge(walked % _CLOCK_EVERY)
        self._sizes[id(value)] = (value, total)
        return total


_CURRENT: contextvars.ContextVar[Budget] = contextvars.ContextVar("blitz_template_budget")


@contextlib.contextmanager
def metered(limits: TemplateBudget) -> Iterator[Budget]:
    """A rendering's budget, current for what runs inside."""
    budget = Budget(limits)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def _budget() -> Budget:
    try:
        return _CURRENT.get()
    except LookupError:
        # Compiled or run outside `metered`: never meant to happen; refuse, don't run free.
        raise SecurityError("a template runs only within its budget") from None


def _work(value: Any) -> int:
    """The steps a filter or method spends on `value` beyond its own."""
    if isinstance(value, (str, bytes)):
        return len(value) // _CHARS_PER_STEP
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value)
    return 0


def _counted(items: Iterable[Any], budget: Budget) -> Iterator[Any]:
    for item in items:
        budget.charge()
        yield item


# Helpers the rewritten tree calls (`nodes.ImportedName`); `environment.call` runs them
# directly. `_loop_vars` and `_block_vars` are what Jinja2 adds to calls in loops and blocks.


def tick(**_: Any) -> bool:
    """One step (a loop iteration, a loop filter's test)."""
    _budget().charge()
    return True


def emit(value: Any, **_: Any) -> str:
    """Output: counted, and written as Jinja2 writes it."""
    budget = _budget()
    if isinstance(value, str):
        return budget.write(value)
    budget.size(value)  # a container within `value`: its text is within a few times that
    return budget.write(str(value))


def built(value: Any, **_: Any) -> Any:
    """A list, tuple or dict literal, measured."""
    _budget().size(value)
    return value


def concat(*parts: Any, **_: Any) -> str:
    """`a ~ b ~ …`, refused before the join when it would be too large."""
    budget = _budget()
    texts, total = [], 0
    for part in parts:
        if not isinstance(part, str):
            budget.size(part)
            part = str(part)
        total += len(part)
        budget.check(total, "the template joins a string too large (`~`)")
        texts.append(part)
    budget.charge(1 + total // _CHARS_PER_STEP)
    return "".join(texts)


_HELPERS = frozenset({tick, emit, built, concat})


def _helper(name: str, *args: nodes.Expr, lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.ImportedName(f"{__name__}.{name}"), list(args), [], None, None)
    call.set_lineno(lineno)  # on the new nodes only: the arguments keep their own
    return call


class _Metering(NodeTransformer):
    """The rewriting of the module doc."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.body.insert(0, nodes.ExprStmt(_helper("tick", lineno=node.lineno)))
        if node.test is not None:
            node.test = nodes.And(_helper("tick", lineno=node.lineno), node.test)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [
            _helper(
                "emit",
                nodes.Const(child.data) if isinstance(child, nodes.TemplateData) else child,
                lineno=child.lineno or node.lineno,
            )
            for child in node.nodes
        ]
        return node

    def _built(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        return _helper("built", node, lineno=node.lineno)

    visit_List = visit_Dict = _built

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        if node.ctx != "load":
            return self.generic_visit(node)  # type: ignore[no-any-return]
        return self._built(node)

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _helper("concat", *node.nodes, lineno=node.lineno)


class _MeteredCodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        _Metering().visit(node)
        node.set_environment(self.environment)
        super().visit_Template(node, frame)


# String methods whose result is no larger than the string, or than a width argument.
_STR_METHODS = frozenset(
    """capitalize casefold center count endswith find index isalnum isalpha isascii
    isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle isupper
    ljust lower lstrip partition removeprefix removesuffix rfind rindex rjust rpartition
    rsplit rstrip split splitlines startswith strip swapcase title upper zfill""".split()
)
_METHODS: dict[type, frozenset[str]] = {
    str: _STR_METHODS,
    dict: frozenset({"get", "items", "keys", "values"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
    int: frozenset({"bit_length", "denominator", "imag", "numerator", "real"}),
    float: frozenset({"imag", "is_integer", "real"}),
    bool: frozenset(),
}


def _check_numbers(budget: Budget, args: Iterable[Any], what: str) -> None:
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > budget.limits.value:
            raise budget.refuse_value(f"{what}: the number {arg} is too large")


def _printf(budget: Budget, template: str, values: Any) -> None:
    """Refuses `template % values` when it could write more than `value`: a width past it,
    a `*` width, or more substitutions of the largest value than fit."""
    specs, widths, at = 0, 0, template.find("%")
    while at != -1:
        at += 1
        if template.startswith("(", at):
            end = template.find(")", at)
            at = len(template) if end == -1 else end + 1
        while at < len(template) and template[at] in "#0- +":
            at += 1
        for _ in range(2):  # the width, then the precision after a dot
            if template.startswith("*", at):
                raise budget.refuse_value("the template formats with a `*` width")
            start = at
            while at < len(template) and template[at].isdigit():
                at += 1
            if at - start > 9 or (at > start and int(template[start:at]) > budget.limits.value):
                raise budget.refuse_value("the template formats with a width too large")
            widths += int(template[start:at] or 0)
            if not template.startswith(".", at):
                break
            at += 1
        specs += 1
        at = template.find("%", at + 1)
    if isinstance(values, Mapping):
        items: Iterable[Any] = values.values()
    elif isinstance(values, tuple):
        items = values
    else:
        items = (values,)
    largest = max((budget.size(v) for v in items), default=0)
    budget.check(len(template) + widths + specs * largest, "the template formats too much")


def _arithmetic(budget: Budget, op: str, left: Any, right: Any) -> None:
    """Refuses `left op right` before Python runs it, when the result would be too large."""
    numbers = (int, float)
    if op == "%":
        if isinstance(left, str):
            _printf(budget, left, right)
        return
    if isinstance(left, int) and isinstance(right, int):
        bits = max(left.bit_length(), right.bit_length(), 1)
        if op == "**":
            if abs(right) > _MAX_EXPONENT or bits * abs(right) > _MAX_BITS:
                raise budget.refuse_value("the template raises a number too high")
        elif op == "*" and left.bit_length() + right.bit_length() > _MAX_BITS:
            raise budget.refuse_value("the template multiplies numbers too large")
        return
    if op == "**":
        if isinstance(right, numbers) and abs(right) > _MAX_EXPONENT:
            raise budget.refuse_value("the exponent is too large")
        return
    if op == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                budget.check(budget.size(seq) * times, "the repetition is too large")
                budget.charge(1 + len(seq) * max(times, 0) // _CHARS_PER_STEP)
        return
    if op == "+" and not isinstance(left, numbers):
        budget.check(budget.size(left) + budget.size(right), "the template adds values too large")


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        budget = _budget()
        budget.charge()
        _arithmetic(budget, operator_, left, right)
        result = self.binop_table[operator_](left, right)
        if isinstance(result, (str, list, tuple)):
            budget.check(budget.size(result), "the template builds a value too large")
        return result

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        allowed = _METHODS.get(type(obj))
        return allowed is None or attr in allowed

    def wrap_str_format(self, value: Any) -> None:
        return None  # no `str.format`: the `format` filter is checked, the method is not

    def call(
        __self,  # named as Jinja2 names it, so that a keyword `self` passes through
        __context: Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if __obj in _HELPERS:
            return __obj(*args, **kwargs)
        budget = _budget()
        receiver = getattr(__obj, "__self__", None)
        budget.charge(1 + _work(receiver))
        if isinstance(receiver, str):
            _check_numbers(budget, (*args, *kwargs.values()), "a string method")
        result = super().call(__context, __obj, *args, **kwargs)
        budget.size(result)
        return result


# Filters that could write many times their input, and what they could write at most.
def _grows(name: str, budget: Budget, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> int:
    def arg(index: int, key: str, default: Any) -> Any:
        return args[index] if len(args) > index else kw.get(key, default)

    size = budget.size(value)
    if name == "replace":
        new = arg(1, "new", "")
        return size + (size + 1) * budget.size(new)
    if name == "indent":
        width = arg(0, "width", 4)
        lines = str(value).count("\n") + 1
        return size + lines * (budget.size(width) if isinstance(width, str) else width)
    if name == "wordwrap":
        wrap = arg(3, "wrapstring", None) or "\n"
        return size * (1 + budget.size(wrap))
    if name == "tojson":
        indent = arg(0, "indent", None) or 0
        return size * (8 + indent)
    if name == "join":
        sep = arg(0, "d", "")
        count = len(value) if isinstance(value, (str, list, tuple, dict)) else 0
        return size + count * budget.size(sep)
    return size


_GROWING = frozenset({"replace", "indent", "wordwrap", "tojson", "join"})
# Integer arguments that are sizes (widths, counts), bounded by `value`.
_SIZED_BY_NUMBERS = frozenset({"batch", "center", "indent", "slice", "truncate", "wordwrap"})
_LEFT_OUT = frozenset({"forceescape", "pprint", "random", "safe", "striptags", "urlize", "xmlattr"})


def _metered_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    passes = getattr(fn, "jinja_pass_arg", None)
    lead = 0 if passes is None else 1

    def metered_filter(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if len(args) <= lead:
            return fn(*args, **kwargs)
        value, rest = args[lead], args[lead + 1 :]
        budget.charge(1 + _work(value))
        if isinstance(value, Iterator):
            value = _counted(value, budget)
            if name == "join":  # measured whole: its separator is written between each
                value = list(value)
        if name in _SIZED_BY_NUMBERS:
            _check_numbers(budget, (*rest, *kwargs.values()), f"the filter {name}")
        if name in _GROWING:
            budget.check(
                _grows(name, budget, value, rest, kwargs), f"the filter {name} writes too much"
            )
        elif name == "format" and isinstance(value, str):
            _printf(budget, value, kwargs or rest)
        elif name == "sum":
            start = rest[1] if len(rest) > 1 else kwargs.get("start", 0)
            if not isinstance(start, (int, float)):
                raise SecurityError("the filter sum adds numbers only")
        result = fn(*args[:lead], value, *rest, **kwargs)
        budget.size(result)
        return result

    if passes is not None:
        metered_filter.jinja_pass_arg = passes  # type: ignore[attr-defined]
    metered_filter.__name__ = f"metered_{name}"
    return metered_filter


ENV = _Sandbox(
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
ENV.code_generator_class = _MeteredCodeGenerator
# No `range`, `lipsum`, `dict`, `cycler`, `joiner` or `namespace`: a template sees only
# what `render` hands it.
ENV.globals.clear()
ENV.filters = {
    name: _metered_filter(name, fn) for name, fn in ENV.filters.items() if name not in _LEFT_OUT
}
