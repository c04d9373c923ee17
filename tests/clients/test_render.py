"""What `blitz chat` prints for the events a pseudo-terminal test cannot easily bring about."""

from __future__ import annotations

import io
import time

from rich.console import Console

from blitz.v1 import turn_pb2 as t
from blitz_cli.render import Renderer, expiry_line


def rendered(*events: t.TurnEvent, per_call_usage: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None)
    renderer = Renderer(console, per_call_usage=per_call_usage)
    for event in events:
        renderer.event(event, replay=True)
    renderer.settle()
    return out.getvalue()


def test_an_approval_with_an_expiry_counts_down_to_its_auto_deny() -> None:
    assert expiry_line(1000.0 + 299.5, now=1000.0).startswith("auto-deny in 4:59 (at ")
    assert expiry_line(900.0, now=1000.0).startswith("auto-deny in 0:00"), "never negative"
    request = t.ApprovalRequest(request_id="r", tool="run_command", detail="ls")
    request.kind = t.ACTION_KIND_COMMAND
    request.expire_time.FromNanoseconds(int((time.time() + 300) * 1e9))
    assert "auto-deny in 4:5" in rendered(t.TurnEvent(approval_request=request))
    assert "auto-deny" not in rendered(
        t.TurnEvent(approval_request=t.ApprovalRequest(request_id="r", detail="ls"))
    )


def test_live_command_output_and_trimmed_history_are_shown() -> None:
    call = t.TurnEvent(tool_call=t.ToolCall(id="c1", name="run_command"))
    output = t.TurnEvent(tool_output=t.ToolOutput(id="c1", name="run_command", output="hi\n"))
    trimmed = t.TurnEvent(
        history_trimmed=t.HistoryTrimmed(dropped_messages=4, kept_turns=2, reason="history_turns")
    )
    state = t.TurnEvent(session_state=t.SessionStateChange(state=t.SessionStateChange.STATE_IDLE))
    shown = rendered(call, output, trimmed, state)
    assert "hi" in shown
    assert "history trimmed: 4 older messages" in shown and "2 turns kept" in shown
    assert "turn " not in shown.replace("turns kept", ""), "a session event starts no turn"


def test_the_footer_says_when_token_counts_are_unknown() -> None:
    finished = t.TurnFinished(after=t.Usage(calls=1, priced=True, tokens_unknown=True))
    assert "some token counts unknown" in rendered(t.TurnEvent(finished=finished))


def test_each_model_calls_tokens_only_when_asked() -> None:
    calls = [t.Usage(calls=1, input=1200, output=80), t.Usage(calls=1, input=3400, output=120)]
    before, after = t.Usage(), t.Usage(calls=2, input=4600, output=200, priced=True)
    events = (
        t.TurnEvent(accepted=t.Accepted()),
        *[t.TurnEvent(usage=usage) for usage in calls],
        t.TurnEvent(finished=t.TurnFinished(before=before, after=after)),
    )
    shown = rendered(*events, per_call_usage=True)
    assert "tokens per model call (in→out): 1200→80, 3400→120" in shown
    assert "2 model calls · 4600 in · 200 out" in shown
    plain = rendered(*events)
    assert "tokens per model call" not in plain
    assert "2 model calls · 4600 in · 200 out" in plain


def test_the_suggested_rule_and_only_the_available_decisions_are_offered() -> None:
    from blitz_cli.prompts import approval_keys

    request = t.ApprovalRequest(
        kind=t.ACTION_KIND_COMMAND,
        detail="pytest -q tests/a.py",
        scope_label="command: pytest -q tests/a.py",
        available_decisions=[
            t.DECISION_ONCE,
            t.DECISION_SESSION,
            t.DECISION_ALWAYS,
            t.DECISION_DENY,
        ],
        suggested_rule=t.RuleMatch(match=t.RULE_MATCH_COMMAND_PREFIX, pattern="pytest -q"),
    )
    assert "[r] always allow `pytest -q …`" in rendered(t.TurnEvent(approval_request=request))
    keys, shown = approval_keys(request)
    assert (keys, "[r]ule" in shown) == ("osardxep", True)

    secret = t.ApprovalRequest(
        kind=t.ACTION_KIND_COMMAND,
        detail="curl -H 'Authorization: ***'",
        available_decisions=[t.DECISION_ONCE, t.DECISION_DENY],
    )
    secret.scope_label = "command: curl -H 'Authorization: ***'"
    assert "[a]lways" not in rendered(t.TurnEvent(approval_request=secret)), "no rule offered"
    keys, shown = approval_keys(secret)
    assert keys == "odxep"
    assert shown == "[o]nce [d]eny [x] deny+stop [e]dit [p]ark"


def test_a_form_resolution_and_a_replayed_prompt_are_shown() -> None:
    values = t.Resolution(request_id="q", via="answer")
    values.values.update({"name": "Ada"})
    shown = rendered(
        t.TurnEvent(turn_id="t_1", accepted=t.Accepted(turn=t.Turn(text="hello there"))),
        t.TurnEvent(resolution=values),
        t.TurnEvent(resolution=t.Resolution(request_id="r", via="answer", declined=True)),
    )
    assert "› hello there" in shown
    assert "↳ answered: name=Ada" in shown
    assert "↳ form declined" in shown


def test_plans_proposed_and_decided_are_shown() -> None:
    steps = [t.Task(content="a"), t.Task(content="b")]
    shown = rendered(
        t.TurnEvent(plan_proposed=t.PlanProposed(plan_id="t_1", plan="do a, b", tasks=steps)),
        t.TurnEvent(plan_decision=t.PlanDecision(plan_id="t_1", feedback="not b")),
    )
    assert "plan proposed (2 steps)" in shown and "plan rejected: not b" in shown


def test_a_rewind_is_shown_in_a_replay() -> None:
    rewound = t.Rewound(to_turn_id="t_1", dropped_turn_ids=["t_2", "t_3"], restored_paths=["a"])
    shown = rendered(t.TurnEvent(turn_id="t_3", rewound=rewound))
    assert "↺ rewound to turn t_1 (2 later turns dropped from the history, 1 file restored)" in (
        " ".join(shown.split())
    )


def test_an_mcp_url_question_shows_the_host_it_opens_apart_from_the_servers_words() -> None:
    url = "https://auth.example.com/login"
    asked = t.Question(
        request_id="q",
        mcp_server="notes",
        question=f"Sign in\n{url}\nopens auth.example.com",
        options=["I have done it", "Decline"],
    )
    shown = rendered(t.TurnEvent(question=asked)).splitlines()
    assert shown[:3] == ["? Sign in", url, "   opens auth.example.com "]
    # A last line that does not name the URL's host is the server's words, shown as such.
    forged = t.Question(request_id="q", mcp_server="notes", question=f"Hi\n{url}\nopens bank.com")
    assert rendered(t.TurnEvent(question=forged)).splitlines()[:3] == [
        "? Hi",
        url,
        "opens bank.com",
    ]
