"""Workflow files as the loader reads them: what loads, and every refusal with its place.

Each refusal is INVALID_ARGUMENT naming the file, the field path and, for YAML, the line.
"""

from __future__ import annotations

import pytest

from blitz.errors import BlitzError, Reason
from blitz.workflows import (
    MAX_FILE_BYTES,
    TemplateRefused,
    bind_params,
    condition,
    load_workflow,
    render,
    resolve,
)
from blitz.workflows.catalog import Found
from blitz.workflows.definitions import Retry

GOOD = """\
workflow: fix
version: "2"
title: Fix a bug
params:
  issue: {type: string, required: true}
  fast: {type: bool, default: false}
  tries: {type: int, default: 3}
  level: {type: enum, values: [low, high], default: low}
steps:
  - id: plan
    type: prompt
    prompt: "Plan a fix for ${{ params.issue }}"
    plan: true
  - id: ok
    type: approval
    of: plan
  - id: test
    type: command
    if: "not params.fast"
    run: "echo ${{ steps.plan.output }}"
    until: {run: "true", max_attempts: 2}
  - id: ask
    type: approval
    question: "Ship it?"
    options: [ship, wait]
  - id: sub
    type: workflow
    workflow: other
    params: {x: "${{ params.issue }}"}
"""


def refused(text: str, file: str = "fix.yaml") -> BlitzError:
    with pytest.raises(BlitzError) as caught:
        load_workflow(file, text.encode())
    assert caught.value.reason is Reason.INVALID_ARGUMENT
    assert caught.value.metadata["file"] == file
    return caught.value


def test_a_good_file_loads_with_every_step_type() -> None:
    workflow = load_workflow("fix.yaml", GOOD.encode())
    assert workflow.label == "fix@2"
    assert [s.type for s in workflow.steps] == [
        "prompt",
        "approval",
        "command",
        "approval",
        "workflow",
    ]
    assert workflow.steps[2].if_ == "not params.fast"


@pytest.mark.parametrize(
    ("change", "field", "line", "words"),
    [
        (("type: command", "type: shell"), "steps[2]", "17", "unknown step type"),
        (('run: "echo', 'command: "echo'), "steps[2].run", "17", "Field required"),
        (("id: ok", "id: plan"), "steps[1].id", "14", "duplicate step id"),
        (("of: plan", "of: nowhere"), "steps[1].of", "16", "no earlier step"),
        (("of: plan", "of: test"), "steps[1].of", "16", "no earlier step"),
        (
            ('params.issue }}"\n    plan', 'params.nope }}"\n    plan'),
            "steps[0].prompt",
            "12",
            "unknown param 'nope'",
        ),
        (("steps.plan.output", "steps.ask.output"), "steps[2].run", "20", "a later step"),
        (("steps.plan.output", "steps.ghost.output"), "steps[2].run", "20", "no such step"),
        (("steps.plan.output", "steps.test.output"), "steps[2].run", "20", "the step itself"),
        (("not params.fast", "params.fast ==="), "steps[2].if", "19", "template syntax"),
        (
            ("tries: {type: int, default: 3}", "tries: {type: float}"),
            "params.tries.type",
            "7",
            "Input should be",
        ),
        (
            ("level: {type: enum, values: [low, high], default: low}", "level: {type: enum}"),
            "params.level",
            "8",
            "needs `values`",
        ),
    ],
)
def test_a_bad_file_names_the_field_and_the_line(change, field, line, words) -> None:
    old, new = change
    assert old in GOOD
    error = refused(GOOD.replace(old, new, 1))
    assert (error.metadata["field"], error.metadata.get("line")) == (field, line)
    assert words in error.message


def test_a_retry_waits_its_backoff_doubled_up_to_its_max_interval() -> None:
    retry = Retry(max_attempts=8, backoff=10, max_interval=60)
    assert [retry.wait(n) for n in range(1, 6)] == [10, 20, 40, 60, 60]


def test_a_retrys_max_interval_is_five_minutes_unless_given() -> None:
    """The default cap; a `backoff` above it is waited as given, without doubling."""
    assert Retry(max_attempts=20, backoff=1).wait(19) == 300
    assert Retry(max_attempts=3, backoff="10m").wait(2) == 600  # type: ignore[arg-type]


def test_a_max_interval_shorter_than_the_backoff_is_refused() -> None:
    text = GOOD.replace(
        "plan: true\n", "plan: true\n    retry: {backoff: 1m, max_interval: 30s}\n", 1
    )
    error = refused(text)
    assert error.metadata["field"] == "steps[0].retry"
    assert "`max_interval` is shorter than `backoff`" in error.message


def test_malformed_yaml_names_its_line() -> None:
    error = refused(GOOD.replace("params:\n", "params: [\n"))
    assert error.metadata["line"] == "6"  # where the parser found what it did not expect
    assert "malformed YAML" in error.message


def test_a_file_that_is_not_a_mapping_is_refused() -> None:
    assert "mapping" in refused("- just\n- a list\n").message


def test_a_file_over_256_kib_is_refused() -> None:
    error = refused(GOOD + "#" * MAX_FILE_BYTES)
    assert "limit" in error.message


def test_more_than_200_steps_are_refused() -> None:
    steps = "".join(f"  - {{id: s{i}, type: command, run: 'true'}}\n" for i in range(201))
    error = refused(f"workflow: big\nsteps:\n{steps}")
    assert error.metadata["field"] == "steps"


@pytest.mark.parametrize(
    "escape",
    [
        "''.__class__",
        "''.__class__.__mro__[1].__subclasses__()",
        "lipsum.__globals__",
        "lipsum",
        "range(10)",
        "params['__class__']",
        "cycler.__init__.__globals__.os",
        "self._TemplateReference__context",
        "config",
    ],
)
def test_template_escapes_are_refused_when_the_file_loads(escape: str) -> None:
    error = refused(GOOD.replace('params.issue }}"\n    plan', escape + ' }}"\n    plan'))
    assert error.metadata["field"] == "steps[0].prompt"


@pytest.mark.parametrize(
    "tag",
    ["${% include '/etc/passwd' %}", "${% import 'os' as os %}", "${% extends '/etc/hosts' %}"],
)
def test_templates_cannot_read_files(tag: str) -> None:
    error = refused(GOOD.replace("Plan a fix for ${{ params.issue }}", tag))
    assert "include, import or extend" in error.message


@pytest.mark.parametrize(
    "source",
    [
        "${{ params.__class__ }}",
        "${{ params.x.__class__.__mro__ }}",
        "${{ 'a' * 100000000 }}",
        "${{ 2 ** 100000 }}",
        "${{ missing }}",
    ],
)
def test_rendering_refuses_what_the_sandbox_forbids(source: str) -> None:
    with pytest.raises(TemplateRefused):
        render(source, {"x": "y"}, {})


def test_rendering_fills_params_and_earlier_steps() -> None:
    steps = {"plan": {"output": "the plan", "status": "succeeded"}}
    text = render(
        "${{ params.issue }}: ${{ steps.plan.output }} (${{ steps.plan.status }})",
        {"issue": "#7"},
        steps,
    )
    assert text == "#7: the plan (succeeded)"
    assert condition("steps.plan.status == 'succeeded' and not params.fast", {"fast": False}, steps)


def test_params_take_their_types_and_defaults() -> None:
    workflow = load_workflow("fix.yaml", GOOD.encode())
    bound = bind_params(workflow, {"issue": "#7", "fast": "yes", "tries": "5"})
    assert bound == {"issue": "#7", "fast": True, "tries": 5, "level": "low"}


@pytest.mark.parametrize(
    ("given", "field", "words"),
    [
        ({}, "params.issue", "required"),
        ({"issue": "x", "nope": "1"}, "params.nope", "unknown param"),
        ({"issue": "x", "tries": "many"}, "params.tries", "integer"),
        ({"issue": "x", "fast": "perhaps"}, "params.fast", "true or false"),
        ({"issue": "x", "level": "medium"}, "params.level", "one of low, high"),
    ],
)
def test_bad_params_are_refused_by_name(given, field, words) -> None:
    workflow = load_workflow("fix.yaml", GOOD.encode())
    with pytest.raises(BlitzError) as caught:
        bind_params(workflow, given)
    assert caught.value.metadata["field"] == field
    assert words in caught.value.message


def _found(**texts: str) -> dict[str, Found]:
    return {
        name: Found(
            name, "server", f"{name}.yaml", load_workflow(f"{name}.yaml", text.encode()), None
        )
        for name, text in texts.items()
    }


def _calls(name: str, target: str, params: str = "{}") -> str:
    step = f"{{id: s, type: workflow, workflow: {target}, params: {params}}}"
    return f"workflow: {name}\nsteps:\n  - {step}\n"


def test_a_cycle_of_sub_workflows_is_refused() -> None:
    found = _found(a=_calls("a", "b"), b=_calls("b", "a"))
    with pytest.raises(BlitzError) as caught:
        resolve("a", found)
    assert caught.value.metadata["field"] == "steps[0].workflow"
    assert "a → b → a" in caught.value.message


def test_sub_workflows_nest_at_most_five_deep() -> None:
    leaf = "workflow: w5\nsteps:\n  - {id: s, type: command, run: 'true'}\n"
    texts = {f"w{i}": _calls(f"w{i}", f"w{i + 1}") for i in range(5)} | {"w5": leaf}
    with pytest.raises(BlitzError) as caught:
        resolve("w0", _found(**texts))
    assert "deeper than 5" in caught.value.message
    resolve("w1", _found(**texts))  # five deep: fine


def test_a_sub_workflows_params_are_checked() -> None:
    leaf = (
        "workflow: leaf\nparams: {x: {required: true}}\n"
        "steps:\n  - {id: s, type: command, run: 'true'}\n"
    )
    with pytest.raises(BlitzError) as caught:
        resolve("top", _found(top=_calls("top", "leaf"), leaf=leaf))
    assert "needs the param 'x'" in caught.value.message
    with pytest.raises(BlitzError) as caught:
        resolve("top", _found(top=_calls("top", "leaf", "{x: 1, y: 2}"), leaf=leaf))
    assert caught.value.metadata["field"] == "steps[0].params.y"


def test_an_unknown_workflow_is_refused() -> None:
    with pytest.raises(BlitzError) as caught:
        resolve("nothing", {})
    assert caught.value.metadata["field"] == "name"
