"""What the sandbox refuses before Python runs it: operations whose result would be too large.

Counting steps bounds how often the template does something, not how much one thing does:
`"x" * 10**9`, `2 ** 10**6`, a `%` format with a huge width, or a `replace` filter on a
long string each make one value of any size in one step. So `+`, `*`, `**` and `%`, the
numbers handed to string methods and sizing filters, and the filters that can write many
times their input are checked here against the `value` limit (and the arithmetic bounds
below) *before* they run, and refused with `value` when they would outgrow it. A check
looks only at the operands (their sizes measured under the budget), never at a result:
nothing here runs the operation it checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from blitz.workflows._meter import CHARS_PER_STEP, Budget

__all__ = ["GROWING", "arithmetic", "check_numbers", "grows", "printf"]

# The largest exponent, and the largest integer (in bits) arithmetic may build: Python
# converts at most 4300 digits to text anyway.
_MAX_EXPONENT = 64
_MAX_BITS = 1 << 14


def check_numbers(budget: Budget, args: Iterable[Any], what: str) -> None:
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > budget.limits.value:
            raise budget.refuse_value(f"{what}: the number {arg} is too large")


def printf(budget: Budget, template: str, values: Any) -> None:
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


def arithmetic(budget: Budget, op: str, left: Any, right: Any) -> None:
    """Refuses `left op right` before Python runs it, when the result would be too large."""
    numbers = (int, float)
    if op == "%":
        if isinstance(left, str):
            printf(budget, left, right)
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
                budget.charge(1 + len(seq) * max(times, 0) // CHARS_PER_STEP)
        return
    if op == "+" and not isinstance(left, numbers):
        budget.check(budget.size(left) + budget.size(right), "the template adds values too large")


# Filters that could write many times their input, and what they could write at most.
def grows(name: str, budget: Budget, value: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> int:
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


GROWING = frozenset({"replace", "indent", "wordwrap", "tojson", "join"})
