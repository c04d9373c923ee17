"""Forms: the JSON Schemas a question may carry, and the answers that fill them in.

A form is what MCP's elicitation asks for: a flat object whose properties are strings
(free, from an `enum` with optional `enumNames`, or of a `format`: email, uri, date,
date-time; with `minLength`/`maxLength`), numbers and integers (`minimum`/`maximum`),
booleans, or arrays of strings from an `enum` (a multi-select; `minItems`/`maxItems`);
each with a `title`, a `description` and a `default`; `required` names the properties
that must be given. A client can render every such form without a schema engine of its
own. `form_problem` says why a schema is not one (or is too large); `values_problem`
checks an answer against it with the `jsonschema` library (Draft 2020-12), the form's
formats included. The agent (its `ask_user` tool, an MCP server's request) and the core
(Answer) both use this module, so a form means one thing on either side.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import FormatChecker

__all__ = ["FORM_BYTES_MAX", "FORM_FIELDS_MAX", "form_problem", "values_problem"]

# How large a form may be: its JSON, and its properties.
FORM_BYTES_MAX = 32 * 1024
FORM_FIELDS_MAX = 50
_FORMATS = frozenset({"email", "uri", "date", "date-time"})
# The keywords each kind of property may carry, beside title, description and default.
_COMMON = frozenset({"type", "title", "description", "default"})
_KEYWORDS = {
    "string": _COMMON | {"enum", "enumNames", "format", "minLength", "maxLength", "pattern"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"items", "minItems", "maxItems", "uniqueItems"},
}


# jsonschema is imported when a form is first checked, not at the server's start (a few
# percent of it): most servers never see a form.
@functools.cache
def _checker() -> FormatChecker:
    from jsonschema import FormatChecker

    return FormatChecker(formats=tuple(_FORMATS))


def form_problem(form: Mapping[str, Any]) -> str:
    """Why `form` is not a form this server passes on ("" when it is one)."""
    try:
        size = len(json.dumps(form))
    except (TypeError, ValueError):
        return "it is not JSON"
    if size > FORM_BYTES_MAX:
        return f"it is {size} bytes of JSON, more than {FORM_BYTES_MAX}"
    if form.get("type") != "object":
        return 'its "type" must be "object"'
    properties = form.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return 'it needs "properties", an object of at least one field'
    if len(properties) > FORM_FIELDS_MAX:
        return f"it has {len(properties)} fields, more than {FORM_FIELDS_MAX}"
    for name, field in properties.items():
        if problem := _field_problem(field):
            return f"field {name!r}: {problem}"
    required = form.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        return '"required" must list some of its fields'
    extra = set(form) - {"type", "properties", "required", "title", "description", "$schema"}
    if extra:
        return f"it has keywords a form does not take: {', '.join(sorted(extra))}"
    from jsonschema import Draft202012Validator

    try:
        Draft202012Validator.check_schema(dict(form))
    except Exception as exc:  # jsonschema's SchemaError, with its own words
        return f"it is not a valid JSON Schema ({getattr(exc, 'message', exc)})"
    return ""


def _field_problem(field: Any) -> str:
    if not isinstance(field, Mapping):
        return "it must be an object"
    kind = field.get("type")
    if kind not in _KEYWORDS:
        return "its type must be string, number, integer, boolean or array"
    extra = set(field) - _KEYWORDS[kind]
    if extra:
        return f"a {kind} field does not take {', '.join(sorted(extra))}"
    if kind == "string" and "format" in field and field["format"] not in _FORMATS:
        return f"its format must be one of {', '.join(sorted(_FORMATS))}"
    if kind == "array":
        items = field.get("items")
        if not (
            isinstance(items, Mapping)
            and items.get("type") == "string"
            and isinstance(items.get("enum"), list)
            and items["enum"]
        ):
            return 'an array field is a multi-select: "items" must be strings from an "enum"'
    if "enum" in field and not (
        isinstance(field["enum"], list) and all(isinstance(v, str) for v in field["enum"])
    ):
        return '"enum" must be a list of strings'
    return ""


def values_problem(form: Mapping[str, Any], values: Mapping[str, Any]) -> tuple[str, str]:
    """The field an answer gets wrong and why (("", "") when `values` fill in `form`)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(
        {**form, "additionalProperties": False}, format_checker=_checker()
    )
    error = next(iter(sorted(validator.iter_errors(dict(values)), key=_where)), None)
    if error is None:
        return "", ""
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = next((r for r in form.get("required", []) if r not in values), "")
        return missing, f"{missing!r} is required"
    if error.validator == "additionalProperties":
        extra = sorted(set(values) - set(form.get("properties", {})))
        return (extra[0] if extra else ""), "the form has no such field"
    field = where.split(".", 1)[0]
    return field, f"{field!r}: {error.message}"


def _where(error: Any) -> tuple[int, str]:
    return (len(error.absolute_path), str(list(error.absolute_path)))
