"""A question's form (Question.form, a JSON Schema of a flat object), asked field by field.

Required fields first, in `required`'s order, then the others by name (a Struct keeps no
order of its keys). Each prompt says what the field takes (`seats (a whole number, 1 to 5)
› `, the range with an en dash) and each answer is checked against its field here, bounds
and formats included, so a bad one is asked again at once with a plain reason ("seats must
be at most 5"). The server
validates the whole again; a field it refuses (its `pattern`, which is not matched here:
an untrusted regular expression is run only by the server's RE2, never by Python's `re`)
is asked again alone with `ask_field`. `/decline` at any field declines the form.

A Struct's numbers are doubles: the schema's bounds arrive as 5.0 and are shown as 5, and
an integer field's answer is a Python int, so nothing writes it back as 9.0.
"""

from __future__ import annotations

import datetime
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from google.protobuf import json_format
from rich.console import Console
from rich.markup import escape

from blitz.v1 import turn_pb2

__all__ = ["Form", "ask_field", "ask_form"]


@dataclass(frozen=True)
class Form:
    """What the user filled in for a question's form, or that they declined it."""

    values: dict[str, Any] = field(default_factory=dict)
    decline: bool = False


_FORM_HELP = "Enter skips an optional field; /decline declines the whole form"
# Loose checks of the formats the server's jsonschema asserts: enough to catch a typo at
# once; the server has the last word.
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
# A number's bounds: the keyword, when a value breaks it, and how a message says it.
_NUMBER_BOUNDS = (
    ("minimum", operator.lt, "at least"),
    ("exclusiveMinimum", operator.le, "more than"),
    ("maximum", operator.gt, "at most"),
    ("exclusiveMaximum", operator.ge, "less than"),
)
_TO = "\u2013"  # an en dash, between a range's bounds
_PATTERN_SHOWN = 60  # characters of a field's pattern its prompt shows
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_FORMATS = {
    "email": ("email", "an email address"),
    "uri": ("a URI", "a URI, such as https://example.com/"),
    "date": ("a date, YYYY-MM-DD", "a date, YYYY-MM-DD"),
    "date-time": (
        "a date and time, YYYY-MM-DDTHH:MM:SSZ",
        "a date and time, such as 2026-12-24T18:00:00Z",
    ),
}


class _NotAnswer(Exception):
    """Why a line is not an answer to a field, in words for the user."""


@dataclass(frozen=True)
class _Field:
    name: str
    spec: dict[str, Any]
    required: bool

    @property
    def title(self) -> str:
        return str(self.spec.get("title") or self.name)

    @property
    def kind(self) -> str:
        return str(self.spec.get("type", "string"))

    @property
    def options(self) -> list[Any]:
        return list(self.spec.get("enum") or (self.spec.get("items") or {}).get("enum") or [])

    def prompt(self) -> str:
        hint = ", ".join(self._hints())
        shown = f"{self.title}{f' ({hint})' if hint else ''}"
        prompt = f"{shown}{'' if self.required else ' [optional]'} › "
        # input() writes the prompt as it is: no control characters from the asker reach
        # the terminal (the schema comes from the model or an MCP server: untrusted).
        return "".join(c for c in prompt if c.isprintable())

    def _hints(self) -> list[str]:
        spec, kind = self.spec, self.kind
        if kind == "boolean":
            return ["y/n"]
        if kind in ("number", "integer"):
            return ["a whole number" if kind == "integer" else "a number", *_range(spec)]
        if kind == "array":
            counted = _between(spec.get("minItems"), spec.get("maxItems"), "choice")
            return ["numbers separated by commas", *counted]
        hints = [_FORMATS[spec["format"]][0]] if spec.get("format") in _FORMATS else []
        hints += _between(spec.get("minLength"), spec.get("maxLength"), "character")
        pattern = spec.get("pattern")
        if isinstance(pattern, str) and pattern:
            shown = pattern if len(pattern) <= _PATTERN_SHOWN else pattern[:_PATTERN_SHOWN] + "…"
            hints.append(f"matching {shown}")
        return hints

    def parse(self, line: str) -> Any:
        """The value `line` gives this field; _NotAnswer says why it gives none."""
        if self.kind == "boolean":
            return self._boolean(line)
        if self.kind in ("number", "integer"):
            return self._number(line)
        if self.kind == "array":
            return self._choices(line)
        if self.options:
            choice = _option(self.options, line)
            if choice is None:
                raise _NotAnswer(self._not_answer(f"type a number from 1 to {len(self.options)}"))
            return choice
        return self._text(line)

    def _not_answer(self, how: str) -> str:
        return f"not an answer for {self.title}: {how}"

    def _boolean(self, line: str) -> bool:
        word = line.lower()
        if word in ("y", "yes", "true", "1"):
            return True
        if word in ("n", "no", "false", "0"):
            return False
        raise _NotAnswer(self._not_answer("type y or n"))

    def _number(self, line: str) -> int | float:
        whole = self.kind == "integer"
        try:
            number = float(line)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or (whole and not number.is_integer()):
            raise _NotAnswer(self._not_answer("type a whole number" if whole else "type a number"))
        value = int(number) if whole else number
        for key, breaks, words in _NUMBER_BOUNDS:
            bound = self.spec.get(key)
            if _is_number(bound) and breaks(value, bound):
                raise _NotAnswer(f"{self.title} must be {words} {_shown(bound)}")
        return value

    def _choices(self, line: str) -> list[Any]:
        chosen: list[Any] = []
        for part in (p.strip() for p in line.split(",")):
            if not part:
                continue
            choice = _option(self.options, part)
            if choice is None:
                raise _NotAnswer(
                    self._not_answer(f"type numbers from 1 to {len(self.options)}, with commas")
                )
            chosen.append(choice)
        chosen = list(dict.fromkeys(chosen))  # a choice typed twice counts once
        least, most = self.spec.get("minItems"), self.spec.get("maxItems")
        if _is_number(least) and len(chosen) < least:
            raise _NotAnswer(f"{self.title} needs at least {_count(least, 'choice')}")
        if _is_number(most) and len(chosen) > most:
            raise _NotAnswer(f"{self.title} takes at most {_count(most, 'choice')}")
        return chosen

    def _text(self, line: str) -> str:
        spec = self.spec
        least, most = spec.get("minLength"), spec.get("maxLength")
        if _is_number(least) and len(line) < least:
            raise _NotAnswer(f"{self.title} must be at least {_count(least, 'character')}")
        if _is_number(most) and len(line) > most:
            raise _NotAnswer(f"{self.title} must be at most {_count(most, 'character')}")
        kind = spec.get("format")
        if kind in _FORMATS and not _conforms(kind, line):
            raise _NotAnswer(f"{self.title} must be {_FORMATS[kind][1]}")
        return line


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(number: Any) -> str:
    """5.0 as 5: the schema came through a Struct, whose numbers are all doubles."""
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def _count(number: Any, noun: str) -> str:
    return f"{_shown(number)} {noun}{'' if number == 1 else 's'}"


def _range(spec: dict[str, Any]) -> list[str]:
    """A number field's bounds, as the prompt shows them: "1 to 5" (with an en dash),
    "at least 1"."""
    low, high = spec.get("minimum"), spec.get("maximum")
    both = _is_number(low) and _is_number(high)
    shown = [f"{_shown(low)}{_TO}{_shown(high)}"] if both else []
    for key, _, words in _NUMBER_BOUNDS:
        if _is_number(spec.get(key)) and not (both and key in ("minimum", "maximum")):
            shown.append(f"{words} {_shown(spec[key])}")
    return shown


def _between(least: Any, most: Any, noun: str) -> list[str]:
    """A count's bounds, as the prompt shows them: "2 to 5 characters" (with an en
    dash), "at most 3 choices"."""
    if _is_number(least) and _is_number(most):
        if least == most:
            return [_count(least, noun)]
        return [f"{_shown(least)}{_TO}{_count(most, noun)}"]
    if _is_number(least) and least > 0:
        return [f"at least {_count(least, noun)}"]
    if _is_number(most):
        return [f"at most {_count(most, noun)}"]
    return []


def _conforms(kind: str, text: str) -> bool:
    if kind == "email":
        return "@" in text
    if kind == "uri":
        return _URI.match(text) is not None
    if kind == "date":
        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            return False
        return _DATE.match(text) is not None
    if kind == "date-time":
        try:
            datetime.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            return False
        return _DATE_TIME.match(text) is not None
    return True


def _option(options: Sequence[Any], text: str) -> Any:
    if text.isdecimal() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    return text if text in options else None


def _fields(question: turn_pb2.Question) -> list[_Field]:
    schema = json_format.MessageToDict(question.form)
    properties: dict[str, dict[str, Any]] = schema.get("properties") or {}
    required = [n for n in schema.get("required") or [] if n in properties]
    order = list(dict.fromkeys(required)) + sorted(n for n in properties if n not in required)
    return [_Field(name, properties[name], name in required) for name in order]


_SKIP = object()  # Enter at an optional field
_DECLINE = object()  # /decline at any field


def _ask(console: Console, one: _Field, read: Callable[[str], str]) -> Any:
    """The field's value, `_SKIP`, or `_DECLINE`."""
    if one.spec.get("description"):
        console.print(f"  [dim]{escape(str(one.spec['description']))}[/]")
    for number, option in enumerate(one.options, 1):
        console.print(f"  {number}. {escape(str(option))}")
    while True:
        line = read(one.prompt()).strip()
        if line == "/decline":
            return _DECLINE
        if not line:
            if not one.required:
                return _SKIP
            console.print(f"[red]{escape(one.title)} is required[/]")
            continue
        try:
            return one.parse(line)
        except _NotAnswer as wrong:
            console.print(f"[red]{escape(str(wrong))}[/]")


def ask_form(
    console: Console, question: turn_pb2.Question, read: Callable[[str], str] = input
) -> Form:
    """The form's values as the user gives them, or that they declined it."""
    console.print(f"[dim]{_FORM_HELP}[/]")
    values: dict[str, Any] = {}
    for one in _fields(question):
        value = _ask(console, one, read)
        if value is _DECLINE:
            return Form(decline=True)
        if value is not _SKIP:
            values[one.name] = value
    return Form(values)


def ask_field(
    console: Console,
    question: turn_pb2.Question,
    form: Form,
    name: str,
    read: Callable[[str], str] = input,
) -> Form:
    """`form` with its field `name` asked again (the server refused that value); the whole
    form again when it has no such field."""
    one = next((f for f in _fields(question) if f.name == name), None)
    if one is None:
        return ask_form(console, question, read)
    value = _ask(console, one, read)
    if value is _DECLINE:
        return Form(decline=True)
    values = {k: v for k, v in form.values.items() if k != name}
    if value is not _SKIP:
        values[name] = value
    return Form(values)
