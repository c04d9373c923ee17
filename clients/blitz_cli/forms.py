"""A question's form (Question.form, a JSON Schema of a flat object), asked field by field.

Required fields first, in `required`'s order, then the others by name (a Struct keeps no
order of its keys). Each answer is checked against its field here, so a typo asks again at
once; the server validates the whole again. `/decline` at any field declines the form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from rich.console import Console
from rich.markup import escape

from blitz.v1 import turn_pb2

__all__ = ["Form", "ask_form"]


@dataclass(frozen=True)
class Form:
    """What the user filled in for a question's form, or that they declined it."""

    values: dict[str, Any]
    decline: bool = False


_FORM_HELP = "Enter skips an optional field; /decline declines the whole form"


def _field_prompt(name: str, spec: dict[str, Any], required: bool) -> str:
    # input() writes the prompt as it is: no control characters from the asker reach the
    # terminal (the schema comes from the model or an MCP server: untrusted).
    title = spec.get("title") or name
    kind = spec.get("type", "string")
    hint = {"boolean": " (y/n)", "number": " (a number)", "integer": " (a whole number)"}.get(
        kind, ""
    )
    if spec.get("format"):
        hint = f" ({spec['format']})"
    prompt = f"{title}{hint}{'' if required else ' [optional]'} › "
    return "".join(c for c in prompt if c.isprintable())


def _parse_field(spec: dict[str, Any], line: str) -> tuple[bool, Any]:
    """(True, value) for a valid answer to one field, else (False, None)."""
    kind = spec.get("type", "string")
    if kind == "boolean":
        word = line.lower()
        if word in ("y", "yes", "true", "1"):
            return True, True
        if word in ("n", "no", "false", "0"):
            return True, False
        return False, None
    if kind in ("number", "integer"):
        try:
            number = float(line)
        except ValueError:
            return False, None
        if kind == "integer":
            return (True, int(number)) if number.is_integer() else (False, None)
        return True, number
    options = spec.get("enum") or (spec.get("items") or {}).get("enum")
    if kind == "array":
        parts = [p.strip() for p in line.split(",") if p.strip()]
        chosen = [_option(options or [], p) for p in parts]
        return (True, chosen) if chosen and None not in chosen else (False, None)
    if options:
        choice = _option(options, line)
        return (choice is not None), choice
    return True, line


def _option(options: Sequence[Any], text: str) -> Any:
    if text.isdecimal() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    return text if text in options else None


def ask_form(
    console: Console, question: turn_pb2.Question, read: Callable[[str], str] = input
) -> Form:
    """The form's values as the user gives them, or that they declined it."""
    schema = json_format.MessageToDict(question.form)
    properties: dict[str, dict[str, Any]] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    console.print(f"[dim]{_FORM_HELP}[/]")
    values: dict[str, Any] = {}
    order = [n for n in schema.get("required") or [] if n in properties]
    order += sorted(n for n in properties if n not in order)
    for name in order:
        spec = properties[name]
        if spec.get("description"):
            console.print(f"  [dim]{escape(str(spec['description']))}[/]")
        options = spec.get("enum") or (spec.get("items") or {}).get("enum")
        for number, option in enumerate(options or [], 1):
            console.print(f"  {number}. {escape(str(option))}")
        while True:
            line = read(_field_prompt(name, spec, name in required)).strip()
            if line == "/decline":
                return Form({}, decline=True)
            if not line and name not in required:
                break
            ok, value = _parse_field(spec, line)
            if ok and line:
                values[name] = value
                break
            console.print(f"[red]not an answer for {escape(str(spec.get('title') or name))}[/]")
    return Form(values)
