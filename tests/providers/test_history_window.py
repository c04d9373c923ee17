"""Long histories: older whole turns dropped with a notice, overflow, and /compact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter
from support.fake_provider import FakeProvider, openai_error, openai_text
from support.recording_io import RecordingIO

from blitz.agent import Agent
from blitz.errors import BlitzError, Reason
from blitz.ports import Completed

MODEL = "openai-compatible:small"


async def history_of(agent: Agent, fake: FakeProvider, workspace: Path, turns: int) -> bytes:
    history: bytes | None = None
    for n in range(turns):
        fake.script(openai_text(f"answer {n} " + "words " * 40, model="small", usage=(0, 0, 0)))
        done = await agent.start(
            io=RecordingIO(),
            model=MODEL,
            workspace=workspace,
            history=history,
            prompt=f"question {n} " + "lorem ipsum " * 40,
        )
        assert isinstance(done, Completed)
        history = done.history
    assert history is not None
    return history


async def test_older_turns_are_dropped_whole_and_history_trimmed_says_how_many(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    history = await history_of(make_agent(), fake, workspace, 4)
    agent = make_agent(default_context_window=800)
    fake.script(openai_text("fits", model="small"))
    done = await agent.start(
        io=io, model=MODEL, workspace=workspace, history=history, prompt="now?"
    )
    assert isinstance(done, Completed)
    [event] = io.of_kind("history_trimmed")
    trimmed = event.history_trimmed
    assert trimmed.reason == "context_window" and trimmed.kept_turns >= 1
    dropped = trimmed.dropped_messages
    assert dropped > 0 and dropped % 2 == 0  # whole turns: a request and its response
    sent = fake.requests[-1].json["messages"]
    assert sent[-1]["content"] == "now?"
    assert not any("question 0" in str(m.get("content")) for m in sent)
    # What was dropped is gone from the session's history too.
    assert len(ModelMessagesTypeAdapter.validate_json(done.history)) == 8 + 2 - dropped


async def test_a_prompt_too_long_for_the_window_is_context_overflow(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    with pytest.raises(BlitzError) as caught:
        await make_agent(default_context_window=100).start(
            io=io, model=MODEL, workspace=workspace, history=None, prompt="word " * 1000
        )
    assert caught.value.reason is Reason.CONTEXT_OVERFLOW
    assert fake.requests == []


async def test_compact_summarises_with_one_recorded_call(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    agent = make_agent()
    history = await history_of(agent, fake, workspace, 2)
    fake.script(openai_text("The user asked two questions.", model="small", usage=(300, 7, 0)))
    new_history, summary = await agent.compact(io=io, model=MODEL, history=history)
    assert summary == "The user asked two questions."
    assert io.model_calls == 1 and [u.input for u in io.usage] == [300]
    sent = fake.requests[-1].json["messages"]
    assert "question 0" in sent[-1]["content"] and "Summarise" in sent[-1]["content"]
    messages = ModelMessagesTypeAdapter.validate_json(new_history)
    assert len(messages) == 2 and summary in str(messages[0])
    assert len(new_history) < len(history)


async def test_compact_retries_a_rate_limit_like_any_model_call(
    fake: FakeProvider, make_agent: Callable[..., Agent], io: RecordingIO, workspace: Path
) -> None:
    agent = make_agent()
    history = await history_of(agent, fake, workspace, 2)
    fake.script(
        openai_error(429, "slow down", code="rate_limit_exceeded"),
        openai_text("Two questions.", model="small", usage=(300, 7, 0)),
    )
    _, summary = await agent.compact(io=io, model=MODEL, history=history)
    assert summary == "Two questions."
    [notice] = io.of_kind("notice")
    assert notice.notice.transient and "retrying" in notice.notice.text
