"""Templates run under a budget: loops, filters, macros and output are counted, a runaway
rendering stops itself, and the server keeps answering while one runs (issue 33)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from support.wire import expect_error, open_wire
from workflows.conftest import session_folder, write_workflow
from workflows.runs import flows, run_workflow

from blitz.errors import BlitzError
from blitz.server import running_server
from blitz.workflows import (
    BudgetExceeded,
    TemplateBudget,
    TemplateRefused,
    condition,
    load_workflow,
    render,
)

# The probe's template: three nested loops, each within the repetition limit, 10^10 in all.
PROBE = (
    "echo ${% for i in 'x'*9999 %}${% for j in 'x'*9999 %}${% for k in 'x'*99 %}"
    "${% endfor %}${% endfor %}${% endfor %}done"
)
# A small budget, so that each refusal below comes fast; the seconds are generous so that
# a loaded machine still stops on the limit each test names.
SMALL = TemplateBudget(steps=20_000, output=64 * 1024, value=64 * 1024, seconds=30.0)
X = {"s": "x"}


def refused(source: str, budget: TemplateBudget = SMALL) -> BudgetExceeded:
    with pytest.raises(BudgetExceeded) as caught:
        render(source, X, {}, budget=budget)
    return caught.value


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("the probe's nested loops", PROBE),
        (
            "loops over a param",
            "${% for i in params.s*9999 %}${% for j in params.s*9999 %}${% endfor %}${% endfor %}",
        ),
        (
            "a loop filter that never passes",
            "${% for i in params.s*999 %}${% for j in params.s*999 if false %}"
            "${% endfor %}${% endfor %}",
        ),
        (
            "a filter walking a large value in a loop",
            "${% for i in params.s*999 %}${{ (params.s*60000)|list|length }}${% endfor %}",
        ),
        (
            "map and join over a large value in a loop",
            "${% for i in params.s*999 %}${{ (params.s*6000)|map('upper')|join|length }}"
            "${% endfor %}",
        ),
        (
            "a macro called in a loop",
            "${% macro m() %}${% for i in params.s*999 %}${% endfor %}${% endmacro %}"
            "${% for i in params.s*999 %}${{ m() }}${% endfor %}",
        ),
        (
            "a recursive loop",
            "${% for i in [params.s*999] recursive %}${{ loop(params.s*999) }}${% endfor %}",
        ),
    ],
)
def test_work_past_the_step_budget_is_refused(name: str, source: str) -> None:
    started = time.monotonic()
    error = refused(source)
    assert error.limit == "steps", name
    assert "20000 steps" in str(error)
    assert time.monotonic() - started < 10, "stopped by the count, not left to run"


def test_range_is_not_offered_to_templates() -> None:
    """The environment has no globals: `range`, `lipsum`, `cycler` are undefined names."""
    for name in ("range(10**9)", "lipsum(10**6)", "cycler(1, 2)", "namespace()"):
        with pytest.raises(TemplateRefused):
            render("${{ " + name + " }}", X, {})


def test_a_macro_that_calls_itself_is_refused() -> None:
    with pytest.raises(TemplateRefused) as caught:
        render("${% macro m(n) %}${{ m(n) }}${% endmacro %}${{ m(1) }}", X, {}, budget=SMALL)
    assert "too deeply" in str(caught.value) or isinstance(caught.value, BudgetExceeded)


def test_a_macro_that_calls_itself_twice_stops_on_the_budget() -> None:
    """Depth 2^n is caught by the count long before Python's recursion limit."""
    error = refused(
        "${% macro m(n) %}${% if n > 0 %}${{ m(n - 1) }}${{ m(n - 1) }}${% endif %}"
        "${% endmacro %}${{ m(40) }}"
    )
    assert error.limit == "steps"


@pytest.mark.parametrize(
    "source",
    [
        "${% for i in params.s*999 %}${{ params.s*999 }}${% endfor %}",
        "${% set t %}${% for i in params.s*999 %}${{ params.s*999 }}${% endfor %}${% endset %}",
    ],
)
def test_output_past_the_budget_is_refused_captured_or_not(source: str) -> None:
    assert refused(source).limit == "output"


@pytest.mark.parametrize(
    "source",
    [
        "${{ (params.s*60000)|join(params.s*100) }}",  # the separator between each
        "${% set s = params.s*60000 %}${{ s ~ s }}",
        "${% set s = params.s*40000 %}${% set b = [s, s] %}${{ [b, b]|length }}",
        "${{ (params.s*60000)|replace('x', 'yy') }}",
        "${{ '%99999999d' % 1 }}",
        "${{ '%*d' % (5, 1) }}",
        "${{ 'x'|center(10**9) }}",
        "${{ ('\n'*1000)|indent(1000) }}",
        "${{ [params.s*40000] + [params.s*40000] }}",
        "${{ params.s * 10**9 }}",
        "${{ ((2**64)**64)**64 }}",
    ],
)
def test_values_past_the_budget_are_refused_before_they_are_built(source: str) -> None:
    assert refused(source).limit == "value"


@pytest.mark.parametrize(
    "source",
    [
        "${{ [1]|sum(start=[]) }}",  # list addition is quadratic
        "${{ params.s.replace('x', 'y') }}",  # the filter, checked, is the way
        "${{ '{:>99999999}'.format(1) }}",
        "${% set l = [1] %}${{ l.append(1) }}",  # lists do not change in place
        "${{ params.s|urlize }}",
    ],
)
def test_operations_without_a_bound_are_refused(source: str) -> None:
    with pytest.raises(TemplateRefused):
        render(source, X, {}, budget=SMALL)


def test_a_rendering_stops_at_its_seconds() -> None:
    slow = TemplateBudget(steps=10**12, seconds=0.2)
    started = time.monotonic()
    with pytest.raises(BudgetExceeded) as caught:
        render(PROBE, X, {}, budget=slow)
    assert caught.value.limit == "seconds"
    assert time.monotonic() - started < 5


def test_conditions_have_the_same_budget() -> None:
    with pytest.raises(BudgetExceeded) as caught:
        condition("(params.s*60000)|join(params.s*100)", X, {}, budget=SMALL)
    assert caught.value.limit == "value"
    assert condition("[1, 2]|sum == 3 and params.s == 'x'", X, {})


def test_ordinary_templates_render_as_before() -> None:
    steps = {"plan": {"output": "a\nb\nc", "status": "succeeded"}}
    text = render(
        "${% for line in steps.plan.output.splitlines() %}${{ loop.index }}:${{ line|upper }} "
        "${% endfor %}${{ '%03d'|format(7) }} ${{ params.s ~ '!' }} "
        "${{ [3, 1, 2]|sort|join(',') }}",
        X,
        steps,
    )
    assert text == "1:A 2:B 3:C 007 x! 1,2,3"


def test_the_probe_is_refused_when_the_file_loads() -> None:
    text = f'workflow: probe\nsteps:\n  - {{id: s, type: command, run: "{PROBE}"}}\n'
    with pytest.raises(BlitzError) as caught:
        load_workflow("probe.yaml", text.encode())
    error = caught.value
    assert error.reason.wire == "INVALID_ARGUMENT"
    assert error.metadata == {
        "file": "probe.yaml",
        "field": "steps[0].run",
        "line": "3",
        "limit": "steps",
    }
    assert "the loops at line 1 run 10^7 times or more" in error.message


# Each render just under the default budget (180 000 loop iterations), then one over it.
HEAVY_STEP = (
    '  - {{id: {id}, type: prompt, prompt: "${{% for i in params.s * {n} %}}'
    '${{% for j in params.s * 300 %}}${{% endfor %}}${{% endfor %}}ok"}}\n'
)
HEAVY = (
    "workflow: heavy\nparams: {s: {default: x}}\nsteps:\n"
    + "".join(HEAVY_STEP.format(id=f"s{i}", n=600) for i in range(5))
    + HEAVY_STEP.format(id="over", n=9999)
)


async def test_healthz_keeps_answering_while_templates_render(settings) -> None:
    """The issue asks for /healthz under 100 ms throughout. On a shared two-core CI machine
    a single sample can miss that for reasons of its own (another process scheduled, a GC),
    so: nine samples in ten under 100 ms, and every one under a second (a rendering on the
    event loop would hold it for the whole rendering, seconds)."""
    async with running_server(settings) as server:
        wire = open_wire("connect", server)
        try:
            session = await wire.create_session()
            write_workflow(session_folder(settings, session.workspace), "heavy", HEAVY)
            running = asyncio.create_task(run_workflow(wire, session.id, "heavy"))
            samples: list[float] = []
            async with httpx.AsyncClient(base_url=server.http_url) as http:
                while not running.done():
                    started = time.perf_counter()
                    assert (await http.get("/healthz")).status_code == 200
                    samples.append(time.perf_counter() - started)
                    await asyncio.sleep(0.01)
                events = await running
                assert (await http.get("/healthz")).status_code == 200
        finally:
            await wire.close()
    assert len(samples) >= 10, "sampled while the templates rendered"
    fast = sum(1 for took in samples if took < 0.1)
    assert fast >= 0.9 * len(samples), sorted(samples)[-5:]
    assert max(samples) < 1.0
    assert flows(events)[-2:] == [("over", "started"), ("over", "failed")]
    error = events[-1].finished.error
    assert error.reason == "INVALID_ARGUMENT"
    assert error.metadata["file"] == ".blitz/workflows/heavy.yaml"
    assert error.metadata["field"] == "steps[5].prompt"
    assert error.metadata["step"] == "over"
    # The count normally; the clock on a machine slow enough to take 2 s for 250 000 steps.
    assert error.metadata["limit"] in ("steps", "seconds")


async def test_a_workflow_past_the_budget_at_load_is_refused_before_any_turn(wire, settings):
    session = await wire.create_session()
    text = f'workflow: probe\nsteps:\n  - {{id: s, type: command, run: "{PROBE}"}}\n'
    write_workflow(session_folder(settings, session.workspace), "probe", text)
    error = await expect_error(
        run_workflow(wire, session.id, "probe"), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["file"] == ".blitz/workflows/probe.yaml"
    assert error.metadata["field"] == "steps[0].run"
    assert error.metadata["limit"] == "steps"
