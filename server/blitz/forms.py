"""Forms: the JSON Schemas a question may carry, and the answers that fill them in.

A form is what MCP's elicitation asks for: a flat object whose properties are strings
(free, from an `enum` with optional `enumNames`, or of a `format`: email, uri, date,
date-time; with `minLength`/`maxLength`), numbers and integers (`minimum`/`maximum`),
booleans, or arrays of strings from an `enum` (a multi-select; `minItems`/`maxItems`);
each with a `title`, a `description` and a `default`; `required` names the properties
that must be given. A client can render every such form without a schema engine of its
own. `form_problem` says why a schema is not one (or is too large); `values_problem`
checks an answer against it with the `jsonschema` library (Draft 2020-12), the form's
formats included, and says what is wrong in plain words ("seats must be at most 5": a
Struct's numbers are doubles, so whole ones are written whole). The agent (its `ask_user`
tool, an MCP server's request) and the core (Answer) both use this module, so a form means
one thing on either side.

A form is the model's or an MCP server's, so it is checked as untrusted code would be: its
size, its fields, and a string field's `pattern`, which must be at most
`FORM_PATTERN_MAX` characters and one RE2 runs. Answers are matched against it by RE2, in
time linear in the answer, never by Python's `re` (which jsonschema would use, and where
`(a+)+$` takes for ever on a long answer): an answer is checked on the event loop.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import FormatChecker

__all__ = [
    "FORM_BYTES_MAX",
    "FORM_FIELDS_MAX",
    "FORM_PATTERN_MAX",
    "form_problem",
    "values_problem",
]

# How large a form may be: its JSON, its properties, and a field's `pattern`.
FORM_BYTES_MAX = 32 * 1024
FORM_FIELDS_MAX = 50
FORM_PATTERN_MAX = 512
# The memory RE2 may give one compiled pattern (bytes): a pattern that needs more, such as
# a large counted repetition, is refused rather than built.
_PATTERN_MEMORY = 1 << 20
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


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> Any:
    """`pattern` compiled by RE2; re2.error when RE2 cannot run it within its memory."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = _PATTERN_MEMORY
    return re2.compile(pattern, options)


def _pattern_problem(pattern: Any) -> str:
    if not isinstance(pattern, str):
        return "its pattern must be a string"
    if len(pattern) > FORM_PATTERN_MAX:
        return f"its pattern is {len(pattern)} characters, more than {FORM_PATTERN_MAX}"
    import re2

    try:
        _pattern(pattern)
    except re2.error:
        return (
            "its pattern must be a regular expression RE2 runs (no backreferences or "
            "lookarounds, no huge repetitions)"
        )
    return ""


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """jsonschema's `pattern` keyword, matched by RE2."""
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    if _pattern_problem(pattern):
        yield ValidationError("the form's pattern cannot be checked")
    elif _pattern(pattern).search(instance) is None:
        yield ValidationError(f"it does not match the pattern {pattern!r}")


@functools.cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {"pattern": _re2_pattern})


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
    if "pattern" in field and (problem := _pattern_problem(field["pattern"])):
        return problem
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
    """The field an answer gets wrong and why, in words a user reads ("seats must be at
    most 5"); ("", "") when `values` fill in `form`."""
    validator = _validator_class()(
        {**form, "additionalProperties": False}, format_checker=_checker()
    )
    error = next(iter(sorted(validator.iter_errors(dict(values)), key=_where)), None)
    if error is None:
        return "", ""
    if error.validator == "required":
        missing = next((r for r in form.get("required", []) if r not in values), "")
        return missing, f"{missing} is required"
    if error.validator == "additionalProperties":
        extra = sorted(set(values) - set(form.get("properties", {})))
        return (extra[0] if extra else ""), "the form has no such field"
    field = str(error.absolute_path[0]) if error.absolute_path else ""
    return field, _plain(field, error)


# What a value of each type is, for "seats must be a whole number".
_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list of choices",
}
_FORMAT_WORDS = {
    "email": "an email address",
    "uri": "a URI, such as https://example.com/",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, such as 2026-12-24T18:00:00Z",
}


def _plain(field: str, error: Any) -> str:
    """A jsonschema error about one field, said plainly: jsonschema's own words quote
    Python reprs (`'seats': 9.0 is greater than the maximum of 5.0`)."""
    bound = error.validator_value
    match error.validator:
        case "type":
            said = f"must be {_TYPE_WORDS.get(str(bound), str(bound))}"
        case "minimum":
            said = f"must be at least {_number(bound)}"
        case "maximum":
            said = f"must be at most {_number(bound)}"
        case "exclusiveMinimum":
            said = f"must be more than {_number(bound)}"
        case "exclusiveMaximum":
            said = f"must be less than {_number(bound)}"
        case "minLength":
            said = f"must be at least {_count(bound, 'character')}"
        case "maxLength":
            said = f"must be at most {_count(bound, 'character')}"
        case "minItems":
            said = f"needs at least {_count(bound, 'choice')}"
        case "maxItems":
            said = f"takes at most {_count(bound, 'choice')}"
        case "uniqueItems":
            said = "lists a choice twice"
        case "enum":
            said = f"must be one of {', '.join(str(o) for o in bound)}"
        case "format":
            said = f"must be {_FORMAT_WORDS.get(str(bound), str(bound))}"
        case "pattern" if error.message.startswith("it "):  # `_re2_pattern`'s words
            said = error.message.removeprefix("it ")
        case _:
            return f"{field}: {error.message}"
    return f"{field} {said}"


def _number(value: Any) -> str:
    """5.0 as "5": the form came through a Struct, whose numbers are all doubles."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _count(value: Any, noun: str) -> str:
    return f"{_number(value)} {noun}{'' if value == 1 else 's'}"


def _where(error: Any) -> tuple[int, str]:
    return (len(error.absolute_path), str(list(error.absolute_path)))
