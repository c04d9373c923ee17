"""Secrets are masked in every event a tool's input or output reaches, live and stored."""

from __future__ import annotations

import pytest
from support.wire import Wire, decide, drive

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

# The core's behaviour, on each store engine.
pytestmark = pytest.mark.engines("sqlite", "postgres")

SECRET = "sk-live1234567890abcdefXYZ"


def tool_side(events: list[t.TurnEvent]) -> list[t.TurnEvent]:
    """Every event but the model's own words (its text, and the turn's output)."""
    return [e for e in events if not e.HasField("text") and not e.HasField("finished")]


async def test_a_commands_live_output_and_result_are_masked_live_and_in_replay(direct: Wire):
    session = await direct.create_session()
    events = await drive(
        direct,
        session.id,
        f"$ echo API_TOKEN={SECRET}",
        decide(direct, session.id, t.DECISION_ONCE),
    )
    replay = [e async for e in direct.stream("Watch", s.WatchRequest(session_id=session.id))]
    output = [e.tool_output.output for e in events if e.HasField("tool_output")]
    assert output == ["API_TOKEN=***\n"], "the live output arrives masked, whole line by line"
    for delivered in (events, replay):
        assert all(SECRET not in str(e) for e in tool_side(delivered))
    assert [e.seq for e in replay] == list(range(1, len(replay) + 1)), "no seq is skipped"


def test_the_servers_own_guidance_is_left_alone_while_real_secrets_are_masked():
    """The masker garbled the server's advice (`give --tokens *** --tokens-file`)."""
    from blitz.auth import ServeRefused, requires_tokens
    from blitz.redact import redact_text

    try:
        requires_tokens(hosts=["0.0.0.0"], tokens_configured=False, insecure=False)
    except ServeRefused as exc:
        advice = str(exc)
    else:  # pragma: no cover
        raise AssertionError("it serves beyond loopback with no token")
    guidance = [
        advice,
        "set --openai-api-key or BLITZ_OPENAI_API_KEY",
        "usage: blitz serve [--tokens TOKENS] [--tokens-file PATH]",
        "pass --api-key (or its variable) to reach the provider",
    ]
    for text in guidance:
        assert redact_text(text) == text
    secrets = {
        "blitz serve --tokens alice:s3cr3t-t0ken": "blitz serve --tokens ***",
        "curl --api-key=abc123def456 https://x": "curl --api-key=*** https://x",
        "run --password hunter2 now": "run --password *** now",
    }
    for text, masked in secrets.items():
        assert redact_text(text) == masked
