"""The counters of one template rendering, and the budget of the rendering in progress.

Every place the sandbox counts (`_rewriting.py`'s helpers, `_sandbox.py`'s environment,
`_refusals.py`'s checks) charges the one `Budget` of the rendering under way: steps, which
also look at the clock, characters written, and the size of every value it builds, so that
no value is larger than `value` and no single operation costs more than about that much.
The budget is a context variable, set by `metered` around a rendering; code that runs
outside one is refused rather than left to run free. Nothing here knows Jinja2's nodes.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterable, Iterator
from typing import Any

from jinja2.sandbox import SecurityError

from blitz.workflows.budget import BudgetExceeded, TemplateBudget

__all__ = ["CHARS_PER_STEP", "Budget", "counted", "current", "metered", "work"]

# Characters of a string a filter or method handles per counted step (`join` walks a
# string at about this many characters per loop iteration's time).
CHARS_PER_STEP = 8
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


def current() -> Budget:
    """The budget of the rendering in progress."""
    try:
        return _CURRENT.get()
    except LookupError:
        # Compiled or run outside `metered`: never meant to happen; refuse, don't run free.
        raise SecurityError("a template runs only within its budget") from None


def work(value: Any) -> int:
    """The steps a filter or method spends on `value` beyond its own."""
    if isinstance(value, (str, bytes)):
        return len(value) // CHARS_PER_STEP
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value)
    return 0


def counted(items: Iterable[Any], budget: Budget) -> Iterator[Any]:
    for item in items:
        budget.charge()
        yield item
