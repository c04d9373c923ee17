"""Workflow runs on the demo model: each step type, params, conditions, retries, plans,
limits and the FlowStep events, on both store engines."""

from __future__ import annotations

import pytest
from support.wire import expect_error
from workflows.conftest import session_folder, write_workflow
from workflows.runs import flows, run_workflow

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workflow_pb2 as f

pytestmark = pytest.mark.engines("sqlite", "postgres")

EVERY = """\
workflow: every
version: "1.2"
params:
  name: {type: string, default: world}
steps:
  - {id: hello, title: Say hello, type: prompt, prompt: "hello ${{ params.name }}"}
  - {id: echo, title: Echo, type: command, run: "echo got ${{ params.name }}"}
  - {id: ask, title: Ask, type: approval, question: "Go on?", options: [go, stop]}
  - {id: sub, title: Sub, type: workflow, workflow: leaf, params: {word: "${{ steps.ask.output }}"}}
  - {id: never, title: Never, type: command, if: "steps.ask.output == 'stop'", run: "false"}
"""
LEAF = """\
workflow: leaf
params:
  word: {type: string, required: true}
steps:
  - {id: say, type: command, run: "echo leaf ${{ params.word }}"}
"""


async def _session(wire, settings, **files: str) -> s.Session:
    session = await wire.create_session()
    for name, text in files.items():
        write_workflow(session_folder(settings, session.workspace), name, text)
    return session


def _finished(events: list[t.TurnEvent]) -> t.Finished:
    assert events[-1].HasField("finished")
    return events[-1].finished


@pytest.mark.parity
async def test_every_step_type_runs_as_one_turn_with_its_flow_steps(wire, settings):
    session = await _session(wire, settings, every=EVERY, leaf=LEAF)
    events = await run_workflow(wire, session.id, "every", {"name": "Bob"}, answer=lambda e: "go")

    kinds = [e.WhichOneof("kind") for e in events]
    assert kinds.count("accepted") == 1 and kinds.count("finished") == 1
    assert flows(events) == [
        ("hello", "started"),
        ("hello", "succeeded"),
        ("echo", "started"),
        ("echo", "waiting"),  # on the command's approval
        ("echo", "succeeded"),
        ("ask", "started"),
        ("ask", "waiting"),
        ("ask", "succeeded"),
        ("sub", "started"),
        ("say", "started"),
        ("say", "waiting"),
        ("sub", "waiting"),  # its sub-workflow's step waits, so it does
        ("say", "succeeded"),
        ("sub", "succeeded"),
        ("never", "skipped"),
    ]
    finished = _finished(events)
    assert finished.error.reason == ""
    assert finished.output == "leaf go\n"  # the last step that ran: never was skipped
    echo = [e.flow_step for e in events if e.flow_step.id == "echo"][-1]
    assert echo.output == "got Bob\n"


@pytest.mark.parity
async def test_flow_steps_of_a_five_step_run_event_by_event(wire, settings):
    five = """\
workflow: five
version: "7"
steps:
  - {id: one, title: First, type: command, run: "echo 1"}
  - {id: two, title: Second, type: prompt, prompt: "two"}
  - {id: three, title: Third, type: command, if: "false", run: "echo 3"}
  - {id: four, title: Fourth, type: approval, question: "Four?", options: [yes4]}
  - {id: five, title: Fifth, type: command, run: "echo 5 ${{ steps.four.output }}"}
"""
    session = await _session(wire, settings, five=five)
    events = await run_workflow(wire, session.id, "five", answer=lambda e: "yes4")
    steps = [e for e in events if e.HasField("flow_step")]
    runs = {e.flow_step.run for e in steps}
    assert len(runs) == 1 and next(iter(runs)).startswith("r_")
    run = next(iter(runs))
    expected = [
        ("one", "First", "command", 1, "started", ""),
        ("one", "First", "command", 1, "waiting", ""),
        ("one", "First", "command", 1, "succeeded", "1\n"),
        ("two", "Second", "prompt", 2, "started", ""),
        ("two", "Second", "prompt", 2, "succeeded", "You said: two"),  # the demo model
        ("three", "Third", "command", 3, "skipped", ""),
        ("four", "Fourth", "approval", 4, "started", ""),
        ("four", "Fourth", "approval", 4, "waiting", ""),
        ("four", "Fourth", "approval", 4, "succeeded", "yes4"),
        ("five", "Fifth", "command", 5, "started", ""),
        ("five", "Fifth", "command", 5, "waiting", ""),
        ("five", "Fifth", "command", 5, "succeeded", "5 yes4\n"),
    ]
    got = [
        (
            e.flow_step.id,
            e.flow_step.title,
            e.flow_step.type,
            e.flow_step.index,
            e.flow_step.status,
            e.flow_step.output,
        )
        for e in steps
    ]
    assert got == expected
    for e in steps:
        assert (e.flow_step.workflow, e.flow_step.count, e.flow_step.error) == ("five@7", 5, "")
        # The envelope names the step as the event does.
        assert (e.step.run, e.step.id, e.step.index) == (run, e.flow_step.id, e.flow_step.index)
    # Every event of a step's work carries that step: the command's tool events, the
    # prompt's text, the approval's question.
    for e in events:
        kind = e.WhichOneof("kind")
        if kind in ("tool_call", "tool_result", "text", "question"):
            assert e.step.id in ("one", "two", "four", "five"), e
    question = next(e for e in events if e.HasField("question"))
    assert (question.step.id, question.step.index) == ("four", 4)
    # A request's resolution is of the step its request was.
    resolutions = [(e.resolution.request_id, e.step.id) for e in events if e.HasField("resolution")]
    asked = {
        e.approval_request.request_id or e.question.request_id: e.step.id
        for e in events
        if e.HasField("approval_request") or e.HasField("question")
    }
    assert resolutions and all(asked[rid] == sid for rid, sid in resolutions)
    assert not events[-1].HasField("step")  # the run's finished is the run's own


@pytest.mark.parity
async def test_params_are_typed_and_checked_before_the_run_starts(wire, settings):
    typed = """\
workflow: typed
params:
  n: {type: int, required: true}
  loud: {type: bool, default: false}
  mood: {type: enum, values: [calm, busy], default: calm}
steps:
  - {id: show, type: command, run: "echo ${{ params.n + 1 }} ${{ params.loud }} ${{ params.mood }}"}
"""
    session = await _session(wire, settings, typed=typed)
    events = await run_workflow(wire, session.id, "typed", {"n": "41", "loud": "yes"})
    assert _finished(events).output == "42 True calm\n"
    for params, field in (
        ({}, "params.n"),
        ({"n": "x"}, "params.n"),
        ({"n": "1", "mood": "sad"}, "params.mood"),
        ({"n": "1", "what": "1"}, "params.what"),
    ):
        error = await expect_error(
            run_workflow(wire, session.id, "typed", params), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == field
    listed = await wire.call("ListTurns", s.ListTurnsRequest(session_id=session.id))
    assert len(listed.turns) == 1  # no refused run became a turn


async def test_a_param_value_is_data_not_a_template(wire, settings):
    echo = """\
workflow: echo
params: {x: {}}
steps:
  - {id: e, type: command, run: "echo '${{ params.x }}'"}
"""
    session = await _session(wire, settings, echo=echo)
    events = await run_workflow(wire, session.id, "echo", {"x": "${{ params.__class__ }}"})
    assert _finished(events).output == "${{ params.__class__ }}\n"


async def test_a_failing_command_fails_the_run_with_the_step_named(wire, settings):
    fail = """\
workflow: fail
steps:
  - {id: ok, type: command, run: "true"}
  - {id: bad, type: command, run: "exit 3"}
  - {id: after, type: command, run: "true"}
  - {id: inverted, type: command, run: "true", expect: failure}
"""
    session = await _session(wire, settings, fail=fail)
    events = await run_workflow(wire, session.id, "fail")
    error = _finished(events).error
    assert (error.reason, error.metadata["step"], error.metadata["exit_code"]) == (
        "STEP_FAILED",
        "bad",
        "3",
    )
    assert flows(events)[-1] == ("bad", "failed")
    assert ("after", "started") not in flows(events)
    failed = next(e.flow_step for e in events if e.flow_step.status == "failed")
    assert failed.error == "STEP_FAILED"


async def test_expect_failure_passes_on_a_non_zero_exit(wire, settings):
    inverted = "workflow: inv\nsteps:\n  - {id: x, type: command, run: 'exit 1', expect: failure}\n"
    session = await _session(wire, settings, inv=inverted)
    assert _finished(await run_workflow(wire, session.id, "inv")).error.reason == ""


async def test_retry_with_backoff_and_until(wire, settings):
    flaky = """\
workflow: flaky
steps:
  - id: flake
    type: command
    run: "test -f once || { touch once; exit 1; }"
    retry: {max_attempts: 3, backoff: 0.05s, on: [STEP_FAILED]}
  - id: poll
    type: command
    run: "echo polling"
    until:
      run: "test -f ready2 || { test -f ready1 && touch ready2; touch ready1; exit 1; }"
      max_attempts: 4
"""
    session = await _session(wire, settings, flaky=flaky)
    events = await run_workflow(wire, session.id, "flaky")
    assert _finished(events).error.reason == ""
    assert flows(events, waiting=False) == [
        ("flake", "started"),
        ("flake", "retrying"),
        ("flake", "succeeded"),
        ("poll", "started"),
        ("poll", "retrying"),
        ("poll", "retrying"),
        ("poll", "succeeded"),
    ]
    assert _finished(events).output == "polling\n"


async def test_until_gives_up_after_its_tries(wire, settings):
    never = """\
workflow: never
steps:
  - {id: p, type: command, run: "true", until: {run: "false", max_attempts: 2}}
"""
    session = await _session(wire, settings, never=never)
    error = _finished(await run_workflow(wire, session.id, "never")).error
    assert (error.reason, error.metadata["step"]) == ("STEP_FAILED", "p")


async def test_retry_on_other_reasons_does_not_retry(wire, settings):
    picky = """\
workflow: picky
steps:
  - {id: p, type: command, run: "false", retry: {max_attempts: 3, on: [MODEL_ERROR]}}
"""
    session = await _session(wire, settings, picky=picky)
    events = await run_workflow(wire, session.id, "picky")
    assert flows(events, waiting=False) == [("p", "started"), ("p", "failed")]


async def test_a_rejected_plan_is_planned_again_with_the_feedback(wire, settings):
    planned = """\
workflow: planned
steps:
  - {id: plan, type: prompt, plan: true, prompt: "todo: look; fix"}
  - {id: review, type: approval, of: plan}
  - {id: act, type: command, run: "echo acting"}
"""
    session = await _session(wire, settings, planned=planned)
    asked: list[str] = []

    def answer(event: t.TurnEvent) -> str:
        asked.append(event.question.question)
        if len(asked) == 1:
            assert list(event.question.options) == ["accept", "reject"]
            return "reject"
        if len(asked) == 2:
            assert not event.question.options  # free text: what should change
            return "add a test first"
        return "accept"

    events = await run_workflow(wire, session.id, "planned", answer=answer)
    assert _finished(events).error.reason == ""
    assert flows(events) == [
        ("plan", "started"),
        ("plan", "succeeded"),
        ("review", "started"),
        ("review", "waiting"),
        ("review", "waiting"),
        ("review", "succeeded"),
        ("plan", "started"),
        ("plan", "succeeded"),
        ("review", "started"),
        ("review", "waiting"),
        ("review", "succeeded"),
        ("act", "started"),
        ("act", "waiting"),
        ("act", "succeeded"),
    ]
    rejected = [
        e.flow_step
        for e in events
        if e.flow_step.id == "review" and e.flow_step.status == "succeeded"
    ]
    assert rejected[0].output == "reject: add a test first"
    assert len(asked) == 3


async def test_the_run_limits_cap_every_step_together(wire, settings):
    capped = """\
workflow: capped
limits: {max_turns: 2}
steps:
  - {id: a, type: prompt, prompt: "one"}
  - {id: b, type: prompt, prompt: "two"}
  - {id: c, type: prompt, prompt: "three"}
"""
    session = await _session(wire, settings, capped=capped)
    events = await run_workflow(wire, session.id, "capped")
    error = _finished(events).error
    assert (error.reason, error.metadata["step"]) == ("MAX_TURNS", "c")
    assert flows(events)[-1] == ("c", "failed")


async def test_a_step_timeout_fails_the_step(wire, settings):
    slow = "workflow: slow\nsteps:\n  - {id: nap, type: command, run: 'sleep 20', timeout: 1s}\n"
    session = await _session(wire, settings, slow=slow)
    error = _finished(await run_workflow(wire, session.id, "slow")).error
    assert (error.reason, error.metadata["step"]) == ("TURN_TIMEOUT", "nap")


async def test_cancel_mid_run_ends_it_cancelled(wire, settings):
    slow = """\
workflow: slow
steps:
  - {id: a, type: command, run: "true"}
  - {id: nap, type: command, run: "sleep 30"}
  - {id: c, type: command, run: "true"}
"""
    session = await _session(wire, settings, slow=slow)
    request = f.RunWorkflowRequest(session_id=session.id, name="slow")
    events = []
    napping = False
    async for event in wire.stream("RunWorkflow", request):
        events.append(event)
        if event.HasField("approval_request"):
            await wire.decide(session.id, event, t.DECISION_ONCE)
            napping = event.step.id == "nap"
        running = event.session_state.state == t.SessionStateChange.STATE_RUNNING
        if running and napping:  # the approved sleep runs: cancel it
            await wire.call("Cancel", s.CancelRequest(session_id=session.id))
            napping = False
    assert _finished(events).error.reason == "CANCELLED"
    assert ("nap", "cancelled") in flows(events)
    assert ("c", "started") not in flows(events)


async def test_run_as_a_command_turn_does_the_same(wire, settings):
    session = await _session(wire, settings, leaf=LEAF)
    events = []
    async for event in wire.run(session.id, "/run leaf word='two words'", command=True):
        events.append(event)
        if event.HasField("approval_request"):
            await wire.decide(session.id, event, t.DECISION_ONCE)
    assert _finished(events).output == "leaf two words\n"
    assert flows(events) == [("say", "started"), ("say", "waiting"), ("say", "succeeded")]


async def test_a_denied_command_fails_its_step(wire, settings):
    session = await _session(wire, settings, leaf=LEAF)
    events = await run_workflow(wire, session.id, "leaf", {"word": "x"}, approve=False)
    error = _finished(events).error
    assert (error.reason, error.metadata["step"]) == ("STEP_FAILED", "say")


async def test_cancel_of_a_parked_run_cancels_its_waiting_steps(wire, settings):
    outer = """\
workflow: outer
steps:
  - {id: inner, type: workflow, workflow: asking}
"""
    asking = "workflow: asking\nsteps:\n  - {id: ask, type: approval, question: 'Well?'}\n"
    session = await _session(wire, settings, outer=outer, asking=asking)
    request = f.RunWorkflowRequest(session_id=session.id, name="outer")
    events = []
    async for event in wire.stream("RunWorkflow", request):
        events.append(event)
        if event.HasField("question"):
            await wire.call("Cancel", s.CancelRequest(session_id=session.id))
    assert _finished(events).error.reason == "CANCELLED"
    assert flows(events)[-2:] == [("ask", "cancelled"), ("inner", "cancelled")]
    cancelled = [e.flow_step for e in events if e.flow_step.status == "cancelled"]
    assert [c.error for c in cancelled] == ["CANCELLED", "CANCELLED"]
    assert [c.workflow for c in cancelled] == ["asking@1", "outer@1"]


async def test_a_steps_output_is_masked_in_its_flow_step(wire, settings):
    leaky = """\
workflow: leaky
steps:
  - {id: leak, type: command, run: "echo API_TOKEN=sk-live1234567890abcdefXYZ"}
"""
    session = await _session(wire, settings, leaky=leaky)
    events = await run_workflow(wire, session.id, "leaky")
    done = next(e.flow_step for e in events if e.flow_step.status == "succeeded")
    assert done.output == "API_TOKEN=***\n"
    assert events[-1].finished.output == "API_TOKEN=***\n"


async def test_a_condition_that_cannot_be_evaluated_fails_its_step(wire, settings):
    odd = "workflow: odd\nsteps:\n  - {id: x, type: command, if: \"1 / 0\", run: 'true'}\n"
    session = await _session(wire, settings, odd=odd)
    events = await run_workflow(wire, session.id, "odd")
    error = events[-1].finished.error
    assert (error.reason, error.metadata["step"]) == ("STEP_FAILED", "x")
    assert flows(events) == [("x", "failed")]


async def test_steer_sent_during_a_command_step_reaches_the_next_prompt_step(wire, settings):
    steered = """\
workflow: steered
steps:
  - {id: wait, type: command, run: "sleep 1"}
  - {id: talk, type: prompt, prompt: "hello"}
"""
    session = await _session(wire, settings, steered=steered)
    request = f.RunWorkflowRequest(session_id=session.id, name="steered")
    events = []
    async for event in wire.stream("RunWorkflow", request):
        events.append(event)
        if event.HasField("approval_request"):
            await wire.decide(session.id, event, t.DECISION_ONCE)
            await wire.call("Steer", s.SteerRequest(session_id=session.id, text="also wave"))
    assert _finished(events).error.reason == ""
    talk = next(e.flow_step for e in events if e.flow_step.id == "talk" and e.flow_step.output)
    assert "also wave" in talk.output, talk


async def test_the_runs_timeout_stops_the_working_step(wire, settings):
    timed = """\
workflow: timed
limits: {timeout: 2s}
steps:
  - {id: nap, type: command, run: "sleep 30"}
"""
    session = await _session(wire, settings, timed=timed)
    events = await run_workflow(wire, session.id, "timed")
    assert _finished(events).error.reason == "TURN_TIMEOUT"
    stopped = [e.flow_step for e in events if e.flow_step.status == "cancelled"]
    assert [(c.id, c.error) for c in stopped] == [("nap", "TURN_TIMEOUT")]
