"""Forms in `blitz chat` (issue 38): each field checked as it is typed, against the bounds
its prompt shows, asked again at once with a plain reason; whole numbers stay whole; a
field the server refuses is asked again alone. And the demo model's answers to them."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import struct_pb2
from rich.console import Console
from support.chat_screens import FOOTER

from blitz.v1 import turn_pb2
from blitz_cli.forms import Form, ask_field, ask_form
from blitz_client import Blitz, BlitzError


def question(properties: dict[str, Any], required: list[str] | None = None) -> turn_pb2.Question:
    """A form question, its schema put through a Struct as the server sends it (5 is 5.0)."""
    form = struct_pb2.Struct()
    form.update({"type": "object", "properties": properties, "required": required or []})
    return turn_pb2.Question(question="Book?", form=form)


class Script:
    """A `read` that types `lines` in turn, and remembers the prompts it was shown."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.lines.pop(0)


def asked(
    form: turn_pb2.Question, *lines: str, ask: Callable[..., Form] = ask_form
) -> tuple[Form, Script, str]:
    """What `ask_form` returns for `lines` typed, the prompts, and what it printed."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    script = Script(*lines)
    result = ask(console, form, read=script)
    assert script.lines == [], "every line typed was read"
    return result, script, out.getvalue()


TO = "\u2013"  # the en dash between a range's bounds
SEATS = {"seats": {"type": "integer", "minimum": 1, "maximum": 5}}


def test_a_value_out_of_range_is_asked_again_at_once_with_a_plain_reason() -> None:
    form, script, printed = asked(question(SEATS, ["seats"]), "9", "3")
    assert script.prompts == [f"seats (a whole number, 1{TO}5) › "] * 2
    assert "seats must be at most 5" in printed
    assert "9.0" not in printed and "5.0" not in printed
    assert form == Form({"seats": 3})


def test_a_whole_number_is_sent_as_an_int() -> None:
    form, _, printed = asked(question(SEATS, ["seats"]), "2.5", "nan", "4.0")
    assert printed.count("not an answer for seats: type a whole number") == 2
    assert form.values == {"seats": 4} and type(form.values["seats"]) is int


@pytest.mark.parametrize(
    ("spec", "prompt"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 5}, f"x (a whole number, 1{TO}5) › "),
        ({"type": "number", "minimum": 0.5}, "x (a number, at least 0.5) › "),
        ({"type": "number", "exclusiveMaximum": 1}, "x (a number, less than 1) › "),
        (
            {"type": "number", "exclusiveMinimum": 0, "maximum": 2},
            "x (a number, more than 0, at most 2) › ",
        ),
        ({"type": "string", "minLength": 2, "maxLength": 8}, f"x (2{TO}8 characters) › "),
        ({"type": "string", "maxLength": 1}, "x (at most 1 character) › "),
        ({"type": "string", "pattern": "^[A-Z]{3}$"}, "x (matching ^[A-Z]{3}$) › "),
        ({"type": "string", "format": "date"}, "x (a date, YYYY-MM-DD) › "),
        ({"type": "string", "format": "email", "title": "Mail"}, "Mail (email) › "),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
            "x (numbers separated by commas, at most 1 choice) › ",
        ),
        ({"type": "boolean"}, "x (y/n) › "),
        ({"type": "string", "enum": ["red", "blue"]}, "x › "),
    ],
)
def test_the_prompt_shows_what_the_field_takes(spec: dict[str, Any], prompt: str) -> None:
    _, script, _ = asked(question({"x": spec}, ["x"]), "/decline")
    assert script.prompts == [prompt]


@pytest.mark.parametrize(
    ("spec", "bad", "reason", "good", "value"),
    [
        ({"type": "integer", "minimum": 1}, "0", "x must be at least 1", "1", 1),
        ({"type": "number", "exclusiveMinimum": 0}, "0", "x must be more than 0", "0.5", 0.5),
        ({"type": "number", "maximum": 2.5}, "3", "x must be at most 2.5", "2.5", 2.5),
        ({"type": "number", "exclusiveMaximum": 1}, "1", "x must be less than 1", "-1", -1.0),
        ({"type": "number"}, "lots", "not an answer for x: type a number", "1e3", 1000.0),
        ({"type": "string", "minLength": 3}, "ab", "x must be at least 3 characters", "abc", "abc"),
        ({"type": "string", "maxLength": 2}, "abc", "x must be at most 2 characters", "ab", "ab"),
        (
            {"type": "string", "format": "date"},
            "24/12/2026",
            "x must be a date, YYYY-MM-DD",
            "2026-12-24",
            "2026-12-24",
        ),
        (
            {"type": "string", "format": "date-time"},
            "2026-12-24",
            "x must be a date and time",
            "2026-12-24T18:00:00Z",
            "2026-12-24T18:00:00Z",
        ),
        ({"type": "string", "format": "email"}, "ada", "x must be an email address", "a@b", "a@b"),
        ({"type": "string", "format": "uri"}, "a b", "x must be a URI", "https://x/", "https://x/"),
        (
            {"type": "string", "enum": ["red", "blue"]},
            "green",
            "not an answer for x: type a number from 1 to 2",
            "2",
            "blue",
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 2},
            "a, a",
            "x needs at least 2 choices",
            "1, c",
            ["a", "c"],
        ),
        (
            {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 1},
            "a,b",
            "x takes at most 1 choice",
            "b",
            ["b"],
        ),
        ({"type": "boolean"}, "maybe", "not an answer for x: type y or n", "yes", True),
    ],
)
def test_a_value_the_field_does_not_take_is_asked_again_with_its_reason(
    spec: dict[str, Any], bad: str, reason: str, good: str, value: Any
) -> None:
    form, script, printed = asked(question({"x": spec}, ["x"]), bad, good)
    assert reason in printed
    assert len(script.prompts) == 2
    assert form == Form({"x": value})


def test_enter_skips_an_optional_field_and_a_required_one_says_it_is_required() -> None:
    form_question = question(
        {"name": {"type": "string", "title": "Name"}, "note": {"type": "string"}}, ["name"]
    )
    form, script, printed = asked(form_question, "", "Ada", "")
    assert "Name is required" in printed
    assert script.prompts == ["Name › ", "Name › ", "note [optional] › "]
    assert form == Form({"name": "Ada"})


def test_decline_at_any_field_declines_the_form() -> None:
    form, _, _ = asked(question(SEATS, ["seats"]), "/decline")
    assert form == Form(decline=True)


def test_a_field_the_server_refused_is_asked_alone_the_others_kept() -> None:
    form_question = question({**SEATS, "code": {"type": "string", "pattern": "^[A-Z]+$"}})
    given = Form({"seats": 2, "code": "abc"})
    form, script, _ = asked(
        form_question, "ABC", ask=lambda c, q, read: ask_field(c, q, given, "code", read)
    )
    assert script.prompts == ["code (matching ^[A-Z]+$) [optional] › "]
    assert form == Form({"seats": 2, "code": "ABC"})


def test_the_servers_refusal_of_a_value_names_the_field_in_plain_words(server_process) -> None:
    form = {"type": "object", "properties": SEATS, "required": ["seats"]}
    prompt = "call ask_user " + json.dumps({"question": "Book?", "form": form})
    with Blitz(server_process.grpc_target) as client:
        session = client.create_session()
        with client.run(session.id, prompt) as events:
            request = next(e for e in events if e.HasField("question")).question
        with pytest.raises(BlitzError) as refused:
            client.answer(session.id, request.request_id, values={"seats": 9})
        assert refused.value.metadata["field"] == "values.seats"
        assert refused.value.message == "seats must be at most 5"
        client.answer(session.id, request.request_id, values={"seats": 2})


def test_a_form_in_the_chat_checks_each_field_and_the_server_refuses_one_alone(terminal):
    """The chat refuses 9 seats at once; the pattern, which only the server matches, is
    refused after the form, and only that field is asked again. The demo model's answer
    then shows the values, the whole number whole."""
    form = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            **SEATS,
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        },
        "required": ["name", "seats", "code"],
    }
    chat = terminal(["chat"])
    chat.prompt("call ask_user " + json.dumps({"question": "Book?", "form": form}))
    chat.expect(r"Name › ")
    chat.child.sendline("Ada")
    chat.expect(rf"seats \(a whole number, 1{TO}5\) › ")
    chat.child.sendline("9")
    chat.expect(r"seats must be at most 5")
    chat.expect(rf"seats \(a whole number, 1{TO}5\) › ")
    chat.child.sendline("3")
    chat.expect(r"code \(matching \^\[A-Z\]\{3\}\$\) › ")
    chat.child.sendline("abc")
    asked_again = chat.expect(r"code \(matching \^\[A-Z\]\{3\}\$\) › ")
    assert "code does not match the pattern" in asked_again
    assert "Name ›" not in asked_again and "seats (" not in asked_again
    chat.child.sendline("ABC")
    answered = chat.expect(FOOTER)
    line = re.search(r"↳ answered: (.*)", answered).group(1)
    assert sorted(line.strip().split(", ")) == ["code=ABC", "name=Ada", "seats=3"]
    assert "answer: code=ABC, name=Ada, seats=3" in answered
    assert "9.0" not in chat.screen and "3.0" not in chat.screen


def test_ask_with_comma_separated_options_offers_each_in_the_chat(terminal):
    chat = terminal(["chat"])
    chat.prompt("ask: ok? [a, b]")
    chat.expect(r"\? ok\?")
    chat.expect(r"1\. a\s+2\. b")
    chat.expect(r"answer › ")
    chat.child.sendline("2")
    chat.expect(r"answer: b")
    chat.expect(FOOTER)
