"""Every pattern a user or a model supplies is bounded in its work: rule globs and the
commands prefix rules parse, and the `pattern` of a form's field (issue 33).

(Workflow templates have their own tests: tests/workflows/test_template_budgets.py. Label
selectors in ListSessions are equality on at most 64 keys of a fixed alphabet, matched by
the store: nothing there is evaluated.)
"""

from __future__ import annotations

import time

import pytest

from blitz.core.requests.rules import MAX_GLOBSTARS, command_parts, made_rule, verdict
from blitz.errors import BlitzError
from blitz.forms import FORM_PATTERN_MAX, form_problem, values_problem
from blitz.store import RuleRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

GLOB = t.RULE_MATCH_PATH_GLOB
# The longest path a write's scope label can name, 512 folders deep.
DEEP = "/".join(["a"] * 511)


def glob_rule(pattern: str) -> RuleRecord:
    return RuleRecord(
        id="r1", scope=s.RULE_SCOPE_SESSION, kind=t.ACTION_KIND_WRITE,
        scope_label=f"write: {pattern}", session_id="s1", workspace="w", caller="",
        create_time=1.0, match_kind=GLOB, pattern=pattern, effect=t.RULE_EFFECT_DENY,
    )  # fmt: skip


def write(path: str) -> t.ApprovalRequest:
    return t.ApprovalRequest(kind=t.ACTION_KIND_WRITE, scope_label=f"write: {path}")


def test_a_glob_with_more_globstars_than_the_bound_is_refused_naming_the_pattern() -> None:
    with pytest.raises(BlitzError) as caught:
        made_rule(
            t.RuleMatch(match=GLOB, pattern="a/**/a/**/a/**/b"),
            write("a/a/a/b"),
            label="write: a/a/a/b",
        )
    assert caught.value.reason.wire == "INVALID_ARGUMENT"
    assert caught.value.metadata == {"field": "rule.pattern", "limit": str(MAX_GLOBSTARS)}


def test_a_stored_glob_past_the_bound_covers_nothing_at_once() -> None:
    """Made before the bound: matching it against the deepest path took seconds."""
    started = time.monotonic()
    assert verdict([glob_rule("a/**/a/**/a/**/b")], write(DEEP)) is None
    assert time.monotonic() - started < 0.5


def test_globs_within_the_bound_match_quickly_on_the_deepest_path() -> None:
    for pattern in ("**/" + "*/" * 100 + "**/b", "a/**/a/**/b", "*a" * 100 + "*b"):
        started = time.monotonic()
        assert verdict([glob_rule(pattern)], write(DEEP)) is None
        assert time.monotonic() - started < 1.0, pattern
    hit = verdict([glob_rule("a/**/a/**/a")], write(DEEP))
    assert hit is not None and not hit.allowed


def test_braces_are_not_expanded_in_a_glob() -> None:
    """wcmatch would expand {a,b}{c,d}… into every combination with its BRACE flag."""
    braces = "{a,b}" * 30
    assert verdict([glob_rule(braces)], write("ab")) is None
    assert verdict([glob_rule(braces)], write(braces)) is not None


def test_the_slowest_command_bashlex_parses_within_a_label_is_quick() -> None:
    """A command is read from its scope label, cut at 1024 characters; nested substitutions
    are bashlex's slowest, and no prefix covers them."""
    nested = ("echo " + '"$(echo ' * 150 + ')"' * 150)[:1024]
    started = time.monotonic()
    assert command_parts(nested) is None
    assert time.monotonic() - started < 1.0
    assert command_parts("git status && ls") == [["git", "status"], ["ls"]]


def form(pattern: object) -> dict[str, object]:
    return {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("x" * (FORM_PATTERN_MAX + 1), f"more than {FORM_PATTERN_MAX}"),
        (r"(a)\1", "RE2"),  # a backreference
        ("(?=a)a", "RE2"),  # a lookahead
        ("(a{1000}){1000}", "RE2"),  # more memory than a pattern may take
        (5, "must be a string"),
    ],
)
def test_a_form_pattern_re2_cannot_run_or_too_long_is_refused(pattern, words) -> None:
    problem = form_problem(form(pattern))
    assert problem.startswith("field 'code': ") and words in problem


def test_a_backtracking_pattern_checks_an_answer_in_linear_time() -> None:
    """`(a+)+$` against 16 000 a's and a b: Python's `re`, which jsonschema uses, never ends."""
    catastrophic = form("^(a+)+$")
    assert form_problem(catastrophic) == ""
    started = time.monotonic()
    field, why = values_problem(catastrophic, {"code": "a" * 16_000 + "b"})
    assert time.monotonic() - started < 1.0
    assert field == "code" and "does not match the pattern" in why
    assert "aaaa" not in why, "the answer is not echoed back"
    assert values_problem(catastrophic, {"code": "aaa"}) == ("", "")
