"""The Jinja2 sandbox that renders workflow templates under a `TemplateBudget`.

Jinja2's `SandboxedEnvironment` keeps a template away from Python's insides; it does not
bound work: three nested loops of 10^4 each are 10^12 iterations, all of them "safe". So
every template is compiled by a code generator that meters it (`_rewriting.py`: loops
count their iterations, output its characters, literals and `~` their size), and counts
against the budget of the rendering in progress (`_meter.py`).

The environment here counts the rest: every call (macros, `loop(...)`, methods) is a step,
and strings keep only methods whose result is no larger than the string or a width within
the limit (no `replace`, `join`, `format`, `expandtabs`: their filters are checked
instead); lists and dicts cannot be changed in place (`ImmutableSandboxedEnvironment`);
`+`, `*`, `**` and `%` are checked against `value` before Python runs them
(`_refusals.py`); every filter counts one step and the items it walks (an iterator's
items as it pulls them), refuses arguments that would make it write more than `value`, and
has its result measured. Filters that only make HTML or debug output (`urlize`,
`xmlattr`, `pprint`, `striptags`, `random`, …) are left out.

Together these keep one invariant: no value the template holds is larger than `value`, so
no single operation (a comparison, a `str()`, a sort) costs more than about that much, and
the step counter, which also checks the deadline, runs between them. A runaway rendering
therefore stops itself within `seconds`, on whatever thread it runs.

The budget of the rendering in progress is a context variable: `metered` sets it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jinja2 import StrictUndefined
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from blitz.workflows._meter import counted, current, metered, work
from blitz.workflows._refusals import GROWING, arithmetic, check_numbers, grows, printf
from blitz.workflows._rewriting import HELPERS, MeteredCodeGenerator

__all__ = ["ENV", "metered"]


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


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        budget = current()
        budget.charge()
        arithmetic(budget, operator_, left, right)
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
        if __obj in HELPERS:
            return __obj(*args, **kwargs)
        budget = current()
        receiver = getattr(__obj, "__self__", None)
        budget.charge(1 + work(receiver))
        if isinstance(receiver, str):
            check_numbers(budget, (*args, *kwargs.values()), "a string method")
        result = super().call(__context, __obj, *args, **kwargs)
        budget.size(result)
        return result


# Integer arguments that are sizes (widths, counts), bounded by `value`.
_SIZED_BY_NUMBERS = frozenset({"batch", "center", "indent", "slice", "truncate", "wordwrap"})
_LEFT_OUT = frozenset({"forceescape", "pprint", "random", "safe", "striptags", "urlize", "xmlattr"})


def _metered_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    passes = getattr(fn, "jinja_pass_arg", None)
    lead = 0 if passes is None else 1

    def metered_filter(*args: Any, **kwargs: Any) -> Any:
        budget = current()
        if len(args) <= lead:
            return fn(*args, **kwargs)
        value, rest = args[lead], args[lead + 1 :]
        budget.charge(1 + work(value))
        if isinstance(value, Iterator):
            value = counted(value, budget)
            if name == "join":  # measured whole: its separator is written between each
                value = list(value)
        if name in _SIZED_BY_NUMBERS:
            check_numbers(budget, (*rest, *kwargs.values()), f"the filter {name}")
        if name in GROWING:
            budget.check(
                grows(name, budget, value, rest, kwargs), f"the filter {name} writes too much"
            )
        elif name == "format" and isinstance(value, str):
            printf(budget, value, kwargs or rest)
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
ENV.code_generator_class = MeteredCodeGenerator
# No `range`, `lipsum`, `dict`, `cycler`, `joiner` or `namespace`: a template sees only
# what `render` hands it.
ENV.globals.clear()
ENV.filters = {
    name: _metered_filter(name, fn) for name, fn in ENV.filters.items() if name not in _LEFT_OUT
}
