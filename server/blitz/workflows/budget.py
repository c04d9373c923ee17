"""What one rendering of a workflow template may spend, and the error when it spends more.

A template is the file's author's code, run by the server: the workspace's owner can plant
one, so its work must be bounded the way a request's size is. `TemplateBudget` holds the
four limits of one rendering (a step's `run`, `prompt`, `question`, an `if`), each with
a name that the refusal carries as ErrorInfo `limit`:

- `steps`: loop iterations (nested and recursive ones each count), loop filter tests,
  calls (a macro, `loop(...)`, a method), filters, and the items a filter walks;
- `output`: characters written, text captured by `set` blocks and macros included;
- `value`: the size of any one string, list or dict the template builds (a list counts
  its items and, inside, their sizes), so no single operation can allocate or compare
  more than this;
- `seconds`: wall time, checked each time a step is counted.

The sandbox that counts is `_sandbox.py`; this module only says what the limits are.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_BUDGET", "BudgetExceeded", "TemplateBudget", "TemplateRefused"]


class TemplateRefused(ValueError):
    """A template that cannot be loaded or rendered: why, in words for the user."""


@dataclass(frozen=True)
class TemplateBudget:
    """The limits of one rendering (see the module doc)."""

    steps: int = 250_000
    output: int = 1 << 20
    value: int = 1 << 20
    seconds: float = 2.0

    def of(self, limit: str) -> str:
        """The limit named `limit`, as words: `100000 steps`, `2 s`."""
        if limit == "seconds":
            return f"{self.seconds:g} s"
        unit = {"steps": "steps", "output": "characters of output", "value": "characters"}
        return f"{getattr(self, limit)} {unit[limit]}"


DEFAULT_BUDGET = TemplateBudget()


class BudgetExceeded(TemplateRefused):
    """A rendering went past one limit of its budget; `limit` names it."""

    def __init__(self, limit: str, budget: TemplateBudget, what: str) -> None:
        super().__init__(f"{what}: past the template budget of {budget.of(limit)}")
        self.limit = limit
        self.bound = budget.of(limit)
